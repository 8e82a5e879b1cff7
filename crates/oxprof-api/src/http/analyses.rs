//! The per-host analyses (OpStats) the service keeps between requests, so that opening
//! the input pipeline analyzer or framework op stats after the overview page of the same
//! host renders from the analysis the first tool computed instead of loading and
//! converting the file again. Concurrent first requests for one host (the UI asks for
//! several tools at once) share a single conversion.
//!
//! Keyed by file path, size and modification time: a rewritten file is analysed again.
//! Bounded in bytes (each analysis is charged its OpStats' JSON size, a close proxy for
//! its heap size), least recently used first out.

use super::cache::{CacheStats, FlightCache, Weighted};
use crate::ApiError;
use crate::data::{HostAnalyses, analyze_host, file_state};
use oxprof_analysis::op_stats::convert::HostAnalysis;
use oxprof_format::HostFile;
use std::sync::Arc;

impl Weighted for HostAnalysis {
    fn weight(&self) -> usize {
        /// Counts bytes written and keeps none.
        struct Count(usize);
        impl std::io::Write for Count {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0 += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut count = Count(0);
        // Serializing plain data into a counter cannot fail; a failure would only
        // undercharge this entry.
        let _ = serde_json::to_writer(&mut count, &self.op_stats);
        count.0 + self.advice.iter().map(String::len).sum::<usize>() + 256
    }
}

/// The cache of host analyses.
pub(super) struct AnalysisCache {
    cache: FlightCache<HostAnalysis, Arc<ApiError>>,
}

impl AnalysisCache {
    pub(super) fn new(limit_bytes: usize) -> Self {
        AnalysisCache { cache: FlightCache::new(limit_bytes) }
    }

    /// The analyses for one request; `refresh` (XProf's `use_saved_result=false`)
    /// converts each host again.
    pub(super) fn source(&self, refresh: bool) -> CachedAnalyses<'_> {
        CachedAnalyses { cache: &self.cache, refresh }
    }

    pub(super) fn stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

/// [`HostAnalyses`] answered from an [`AnalysisCache`].
pub(super) struct CachedAnalyses<'a> {
    cache: &'a FlightCache<HostAnalysis, Arc<ApiError>>,
    refresh: bool,
}

impl HostAnalyses for CachedAnalyses<'_> {
    fn analysis(&self, file: &HostFile) -> Result<Arc<HostAnalysis>, ApiError> {
        let Some((len, mtime)) = file_state(&file.path) else {
            // Unreadable metadata: the load reports why.
            return analyze_host(file).map(Arc::new);
        };
        let key = format!("{}\0{len}\0{mtime}", file.path.display());
        self.cache
            .get_or_compute(&key, self.refresh, || analyze_host(file).map_err(Arc::new))
            .map_err(|shared| Arc::try_unwrap(shared).unwrap_or_else(ApiError::Shared))
    }
}
