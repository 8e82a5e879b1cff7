//! oxprof's HTTP server: XProf-compatible routes and the web UI (thin: routing, compression, static files; request → response logic lives in `oxprof-api`).
