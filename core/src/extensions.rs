//! [`Extensions`]: typed values a host hands to its tools.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Typed values a host hands to its tools (a database handle, say), keyed by type.
///
/// ```
/// use patchbay_core::context::Extensions;
/// #[derive(Debug, PartialEq)] struct Db(u32);
/// let mut ext = Extensions::new();
/// ext.insert(Db(7));
/// assert_eq!(ext.get::<Db>(), Some(&Db(7)));
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert a value, replacing any of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if any.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.map.get(&TypeId::of::<T>()).and_then(|value| value.downcast_ref())
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Extensions({} values)", self.map.len())
    }
}
