//! Compact column types for event and stat tables.
//!
//! A decoded profile must take less memory than its file (≈28 bytes per event on disk),
//! so the per-event columns avoid fixed 64-bit storage where values are usually small:
//!
//! * [`BlockedI64`]: values stored as a 64-bit base per block of 64 plus a 32-bit delta;
//!   blocks whose spread does not fit 32 bits fall back to full 64-bit values.
//!   Timestamps within a line are close together, so almost every block is narrow.
//! * [`EscapedI64`]: a 32-bit value per row; values outside `0..u32::MAX` are kept in a
//!   sorted side table (long durations are rare).

/// Rows per block in [`BlockedI64`].
const BLOCK: usize = 64;
const NARROW: u32 = u32::MAX;

/// A column of `i64` values that are close to each other within blocks of 64 rows.
#[derive(Debug, Default, Clone)]
pub(crate) struct BlockedI64 {
    base: Vec<i64>,
    /// Per block: `NARROW`, or the start of this block's values in `wide`.
    wide_start: Vec<u32>,
    delta: Vec<u32>,
    wide: Vec<i64>,
    pending: Vec<i64>,
}

impl BlockedI64 {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        BlockedI64 {
            base: Vec::with_capacity(rows / BLOCK + 1),
            wide_start: Vec::with_capacity(rows / BLOCK + 1),
            delta: Vec::with_capacity(rows),
            wide: Vec::new(),
            pending: Vec::with_capacity(BLOCK),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, value: i64) {
        self.pending.push(value);
        if self.pending.len() == BLOCK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let min = self.pending.iter().copied().min().unwrap_or(0);
        let max = self.pending.iter().copied().max().unwrap_or(0);
        self.base.push(min);
        let spread = (max as i128) - (min as i128);
        if spread < i128::from(NARROW) {
            self.wide_start.push(NARROW);
            self.delta.extend(self.pending.iter().map(|&v| (v.wrapping_sub(min)) as u32));
        } else {
            self.wide_start.push(self.wide.len() as u32);
            self.wide.extend_from_slice(&self.pending);
            self.delta.extend(std::iter::repeat_n(0, self.pending.len()));
        }
        self.pending.clear();
    }

    /// Completes the column; no more pushes are expected.
    pub(crate) fn finish(&mut self) {
        self.flush();
        self.pending = Vec::new();
        self.base.shrink_to_fit();
        self.wide_start.shrink_to_fit();
        self.delta.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    #[inline]
    pub(crate) fn get(&self, row: usize) -> i64 {
        let block = row / BLOCK;
        let start = self.wide_start[block];
        if start == NARROW {
            self.base[block].wrapping_add(i64::from(self.delta[row]))
        } else {
            self.wide[start as usize + row % BLOCK]
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.base.capacity() * 8 + self.wide_start.capacity() * 4 + self.delta.capacity() * 4 + self.wide.capacity() * 8
    }
}

/// A column of `i64` values that are usually in `0..u32::MAX`.
#[derive(Debug, Default, Clone)]
pub(crate) struct EscapedI64 {
    narrow: Vec<u32>,
    /// `(row, value)` for rows whose value does not fit, sorted by row.
    escaped: Vec<(u32, i64)>,
}

impl EscapedI64 {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        EscapedI64 { narrow: Vec::with_capacity(rows), escaped: Vec::new() }
    }

    #[inline]
    pub(crate) fn push(&mut self, value: i64) {
        if (0..i64::from(NARROW)).contains(&value) {
            self.narrow.push(value as u32);
        } else {
            self.escaped.push((self.narrow.len() as u32, value));
            self.narrow.push(NARROW);
        }
    }

    pub(crate) fn finish(&mut self) {
        self.narrow.shrink_to_fit();
        self.escaped.shrink_to_fit();
    }

    #[inline]
    pub(crate) fn get(&self, row: usize) -> i64 {
        let v = self.narrow[row];
        if v != NARROW {
            return i64::from(v);
        }
        match self.escaped.binary_search_by_key(&(row as u32), |&(r, _)| r) {
            Ok(i) => self.escaped[i].1,
            Err(_) => i64::from(v),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.narrow.capacity() * 4 + self.escaped.capacity() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_column_round_trips_narrow_and_wide_blocks() {
        let mut values: Vec<i64> = (0..200).map(|i| 1_000_000 + i * 7).collect();
        values[70] = i64::MAX; // forces block 1 wide
        values[150] = -5; // block 2: spread still fits
        values.push(i64::MIN);
        let mut col = BlockedI64::with_capacity(0);
        for &v in &values {
            col.push(v);
        }
        col.finish();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(col.get(i), v, "row {i}");
        }
    }

    #[test]
    fn escaped_column_round_trips() {
        let values = [0i64, 5, u32::MAX as i64, -1, i64::MAX, 42, u32::MAX as i64 - 1];
        let mut col = EscapedI64::with_capacity(0);
        for &v in &values {
            col.push(v);
        }
        col.finish();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(col.get(i), v);
        }
    }
}
