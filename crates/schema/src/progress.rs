//! A stage's progress callback: the driver hands one to a stage, the stage
//! calls it with the number of work items (tuples, pairs) it just finished.

use std::fmt;
use std::sync::Arc;

/// Counts finished work items; cheap to clone, safe to call from any thread.
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(u64) + Send + Sync>);

impl Progress {
    /// Wraps `callback`.
    pub fn new(callback: impl Fn(u64) + Send + Sync + 'static) -> Self {
        Progress(Arc::new(callback))
    }

    /// Reports `items` more finished items.
    pub fn add(&self, items: u64) {
        if items > 0 {
            (self.0)(items);
        }
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Progress(..)")
    }
}
