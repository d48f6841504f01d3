//! [`Resource`]: an amount of memory and CPU, as YARN counts them.

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Sub, SubAssign};

/// Memory (MB) and virtual cores. Used for node capacities, container
/// sizes, queue usage and limits.
///
/// Arithmetic saturates at the numeric bounds instead of overflowing
/// (`+`, `-` and their assigning forms included), so a corrupt or hostile
/// value from the wire cannot panic the scheduler; subtraction can go
/// negative, as Hadoop's does, and [`Resource::saturating_sub_non_negative`]
/// clamps at zero for callers that need it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    pub memory_mb: i64,
    pub vcores: i32,
}

impl Resource {
    /// No memory, no cores.
    pub const ZERO: Resource = Resource {
        memory_mb: 0,
        vcores: 0,
    };

    pub const fn new(memory_mb: i64, vcores: i32) -> Resource {
        Resource { memory_mb, vcores }
    }

    /// Both components are zero.
    pub fn is_zero(&self) -> bool {
        self.memory_mb == 0 && self.vcores == 0
    }

    /// Some component is below zero.
    pub fn any_negative(&self) -> bool {
        self.memory_mb < 0 || self.vcores < 0
    }

    /// Every component of `self` is at most the matching component of
    /// `other` (the container fits in the space).
    pub fn fits_in(&self, other: &Resource) -> bool {
        self.memory_mb <= other.memory_mb && self.vcores <= other.vcores
    }

    /// Some component of `self` exceeds the matching one of `other`.
    pub fn any_greater_than(&self, other: &Resource) -> bool {
        !self.fits_in(other)
    }

    /// Component-wise sum, saturating at the numeric bounds.
    pub fn saturating_add(self, other: Resource) -> Resource {
        Resource {
            memory_mb: self.memory_mb.saturating_add(other.memory_mb),
            vcores: self.vcores.saturating_add(other.vcores),
        }
    }

    /// Component-wise difference, saturating at the numeric bounds (it may
    /// be negative).
    pub fn saturating_sub(self, other: Resource) -> Resource {
        Resource {
            memory_mb: self.memory_mb.saturating_sub(other.memory_mb),
            vcores: self.vcores.saturating_sub(other.vcores),
        }
    }

    /// Component-wise difference with each component clamped at zero
    /// (e.g. the free space of a node that is over-committed).
    pub fn saturating_sub_non_negative(self, other: Resource) -> Resource {
        self.saturating_sub(other).component_max(Resource::ZERO)
    }

    /// Component-wise sum, or `None` on overflow.
    pub fn checked_add(self, other: Resource) -> Option<Resource> {
        Some(Resource {
            memory_mb: self.memory_mb.checked_add(other.memory_mb)?,
            vcores: self.vcores.checked_add(other.vcores)?,
        })
    }

    /// Component-wise difference, or `None` on overflow.
    pub fn checked_sub(self, other: Resource) -> Option<Resource> {
        Some(Resource {
            memory_mb: self.memory_mb.checked_sub(other.memory_mb)?,
            vcores: self.vcores.checked_sub(other.vcores)?,
        })
    }

    /// Both components multiplied by `factor`, saturating.
    pub fn saturating_mul(self, factor: i32) -> Resource {
        Resource {
            memory_mb: self.memory_mb.saturating_mul(i64::from(factor)),
            vcores: self.vcores.saturating_mul(factor),
        }
    }

    /// The smaller of each component.
    pub fn component_min(self, other: Resource) -> Resource {
        Resource {
            memory_mb: self.memory_mb.min(other.memory_mb),
            vcores: self.vcores.min(other.vcores),
        }
    }

    /// The larger of each component.
    pub fn component_max(self, other: Resource) -> Resource {
        Resource {
            memory_mb: self.memory_mb.max(other.memory_mb),
            vcores: self.vcores.max(other.vcores),
        }
    }

    /// Each component clamped into `[min, max]` (e.g. a request into the
    /// scheduler's minimum and maximum allocation).
    pub fn clamp(self, min: Resource, max: Resource) -> Resource {
        self.component_max(min).component_min(max)
    }
}

/// Hadoop's `Resource.toString()` form: `<memory:1024, vCores:1>`.
impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<memory:{}, vCores:{}>", self.memory_mb, self.vcores)
    }
}

impl Add for Resource {
    type Output = Resource;
    fn add(self, other: Resource) -> Resource {
        self.saturating_add(other)
    }
}

impl AddAssign for Resource {
    fn add_assign(&mut self, other: Resource) {
        *self = self.saturating_add(other);
    }
}

impl Sub for Resource {
    type Output = Resource;
    fn sub(self, other: Resource) -> Resource {
        self.saturating_sub(other)
    }
}

impl SubAssign for Resource {
    fn sub_assign(&mut self, other: Resource) {
        *self = self.saturating_sub(other);
    }
}

impl Sum for Resource {
    fn sum<I: Iterator<Item = Resource>>(iter: I) -> Resource {
        iter.fold(Resource::ZERO, Resource::saturating_add)
    }
}

impl<'a> Sum<&'a Resource> for Resource {
    fn sum<I: Iterator<Item = &'a Resource>>(iter: I) -> Resource {
        iter.copied().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_like_hadoop() {
        assert_eq!(
            Resource::new(1024, 1).to_string(),
            "<memory:1024, vCores:1>"
        );
        assert_eq!(Resource::ZERO.to_string(), "<memory:0, vCores:0>");
    }

    #[test]
    fn arithmetic() {
        let a = Resource::new(4096, 4);
        let b = Resource::new(1024, 3);
        assert_eq!(a + b, Resource::new(5120, 7));
        assert_eq!(a - b, Resource::new(3072, 1));
        assert_eq!(b - a, Resource::new(-3072, -1));
        assert!((b - a).any_negative());
        assert_eq!(b.saturating_sub_non_negative(a), Resource::ZERO);
        assert_eq!(
            Resource::new(10, 1).saturating_sub_non_negative(Resource::new(5, 2)),
            Resource::new(5, 0)
        );
        let mut c = a;
        c += b;
        c -= b;
        assert_eq!(c, a);
        assert_eq!(b.saturating_mul(3), Resource::new(3072, 9));
        let total: Resource = [a, b, b].iter().sum();
        assert_eq!(total, Resource::new(6144, 10));
        let owned_total: Resource = vec![a, b].into_iter().sum();
        assert_eq!(owned_total, a + b);
    }

    #[test]
    fn saturation_and_checked() {
        let max = Resource::new(i64::MAX, i32::MAX);
        assert_eq!(max + Resource::new(1, 1), max);
        assert_eq!(max.checked_add(Resource::new(0, 1)), None);
        assert_eq!(
            Resource::new(1, 1).checked_add(Resource::new(1, 1)),
            Some(Resource::new(2, 2))
        );
        let min = Resource::new(i64::MIN, i32::MIN);
        assert_eq!(min - Resource::new(1, 1), min);
        assert_eq!(min.checked_sub(Resource::new(1, 0)), None);
        assert_eq!(
            Resource::new(2, 2).checked_sub(Resource::new(1, 1)),
            Some(Resource::new(1, 1))
        );
        assert_eq!(
            Resource::new(i64::MAX / 2 + 1, 1)
                .saturating_mul(2)
                .memory_mb,
            i64::MAX
        );
    }

    #[test]
    fn comparisons() {
        let node = Resource::new(8192, 8);
        assert!(Resource::new(8192, 8).fits_in(&node));
        assert!(Resource::new(1024, 1).fits_in(&node));
        assert!(!Resource::new(9000, 1).fits_in(&node));
        assert!(!Resource::new(1024, 9).fits_in(&node));
        assert!(Resource::new(1024, 9).any_greater_than(&node));
        assert!(!Resource::new(1, 1).any_greater_than(&node));
        assert!(Resource::ZERO.is_zero());
        assert!(!Resource::new(0, 1).is_zero());
    }

    #[test]
    fn min_max_clamp() {
        let a = Resource::new(4096, 1);
        let b = Resource::new(1024, 4);
        assert_eq!(a.component_min(b), Resource::new(1024, 1));
        assert_eq!(a.component_max(b), Resource::new(4096, 4));
        let lo = Resource::new(1024, 1);
        let hi = Resource::new(8192, 4);
        assert_eq!(Resource::new(512, 8).clamp(lo, hi), Resource::new(1024, 4));
        assert_eq!(Resource::new(2048, 2).clamp(lo, hi), Resource::new(2048, 2));
    }
}
