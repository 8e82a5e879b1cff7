//! C-style number and string printing for the HLO text printers (`hlo_lookup`), which
//! print numbers and strings the way XLA's C++ does. The implementations live with XProf's
//! other wire formats in `oxprof_wire::cxx_printf`.

pub use oxprof_wire::cxx_printf::{c_escape, c_escape_into, format_g};
