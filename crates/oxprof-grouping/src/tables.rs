//! Compact per-line group id tables: run-length encoded when events of a line mostly share
//! their neighbour's group (the usual case: a step covers many consecutive events), dense
//! otherwise. Lookups by event index; sequential decoding for whole-line scans.

/// Sentinel for "no group".
pub(crate) const NO_GROUP: u32 = u32::MAX;

/// The group ids of one line's events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineGroups {
    /// `(first event, group)` runs, sorted by first event; the first run starts at 0.
    Runs { len: u32, runs: Vec<(u32, u32)> },
    /// One group per event.
    Dense(Vec<u32>),
}

impl Default for LineGroups {
    fn default() -> Self {
        LineGroups::Runs { len: 0, runs: Vec::new() }
    }
}

impl LineGroups {
    /// Builds the smaller representation of `ids`.
    pub(crate) fn from_dense(ids: Vec<u32>) -> LineGroups {
        let mut builder = RunBuilder::default();
        for &id in &ids {
            builder.push(id);
            if builder.runs.len() * 2 > ids.len() + 2 {
                return LineGroups::Dense(ids);
            }
        }
        builder.finish()
    }

    /// Runs built elsewhere: `(first event, group)`, sorted, first at 0, neighbours differ.
    pub(crate) fn from_runs(len: u32, mut runs: Vec<(u32, u32)>) -> LineGroups {
        runs.shrink_to_fit();
        LineGroups::Runs { len, runs }
    }

    /// All `NO_GROUP`.
    pub(crate) fn ungrouped(len: usize) -> LineGroups {
        LineGroups::Runs { len: len as u32, runs: vec![(0, NO_GROUP)] }
    }

    /// Number of events.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match self {
            LineGroups::Runs { len, .. } => *len as usize,
            LineGroups::Dense(ids) => ids.len(),
        }
    }

    /// The group of one event (`NO_GROUP` when none or out of range).
    pub(crate) fn get(&self, event: usize) -> u32 {
        match self {
            LineGroups::Runs { len, runs } => {
                if event >= *len as usize {
                    return NO_GROUP;
                }
                let at = runs.partition_point(|&(start, _)| start as usize <= event);
                at.checked_sub(1).and_then(|i| runs.get(i)).map_or(NO_GROUP, |r| r.1)
            }
            LineGroups::Dense(ids) => ids.get(event).copied().unwrap_or(NO_GROUP),
        }
    }

    /// Groups in event order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (dense, runs, len) = match self {
            LineGroups::Dense(ids) => (Some(ids), None, ids.len()),
            LineGroups::Runs { len, runs } => (None, Some(runs), *len as usize),
        };
        let mut run = 0usize;
        (0..len).map(move |event| {
            if let Some(ids) = dense {
                return ids.get(event).copied().unwrap_or(NO_GROUP);
            }
            let runs = runs.map_or(&[][..], |r| &r[..]);
            while runs.get(run + 1).is_some_and(|&(start, _)| start as usize <= event) {
                run += 1;
            }
            runs.get(run).map_or(NO_GROUP, |r| r.1)
        })
    }

    /// Heap bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            LineGroups::Runs { runs, .. } => runs.capacity() * 8,
            LineGroups::Dense(ids) => ids.capacity() * 4,
        }
    }
}

/// Run-length encoder fed one group per event in event order.
#[derive(Debug, Default)]
pub(crate) struct RunBuilder {
    len: u32,
    runs: Vec<(u32, u32)>,
}

impl RunBuilder {
    pub(crate) fn push(&mut self, group: u32) {
        if self.runs.last().is_none_or(|&(_, g)| g != group) {
            self.runs.push((self.len, group));
        }
        self.len += 1;
    }

    pub(crate) fn finish(mut self) -> LineGroups {
        self.runs.shrink_to_fit();
        LineGroups::Runs { len: self.len, runs: self.runs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_dense_agree() {
        let ids = vec![NO_GROUP, 0, 0, 0, 1, 1, NO_GROUP, 2, 2, 2, 2];
        let groups = LineGroups::from_dense(ids.clone());
        assert!(matches!(groups, LineGroups::Runs { .. }));
        assert_eq!(groups.iter().collect::<Vec<_>>(), ids);
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(groups.get(i), id);
        }
        assert_eq!(groups.get(ids.len()), NO_GROUP);
        let alternating: Vec<u32> = (0..20).map(|i| i % 2).collect();
        let dense = LineGroups::from_dense(alternating.clone());
        assert!(matches!(dense, LineGroups::Dense(_)));
        assert_eq!(dense.iter().collect::<Vec<_>>(), alternating);
        assert_eq!(LineGroups::ungrouped(3).iter().collect::<Vec<_>>(), vec![NO_GROUP; 3]);
        assert_eq!(LineGroups::default().len(), 0);
    }
}
