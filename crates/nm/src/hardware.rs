//! The node's resources: what the NodeManager offers to the cluster.
//!
//! Follows Hadoop's rules for `yarn.nodemanager.resource.memory-mb` and
//! `yarn.nodemanager.resource.cpu-vcores`:
//!
//! - a configured value other than −1 is used as is (it must be positive);
//! - −1 with `yarn.nodemanager.resource.detect-hardware-capabilities=false`
//!   means Hadoop's fixed defaults, 8192 MB and 8 vcores;
//! - −1 with detection on reads the host:
//!   - memory: physical memory from `/proc/meminfo` (MemTotal less
//!     HardwareCorrupted less the huge-page pool), minus
//!     `yarn.nodemanager.resource.system-reserved-memory-mb` when that is
//!     set; when it is not, Hadoop keeps 80 % of what is left after two JVM
//!     heaps (its own and a co-located DataNode's). Spindle has no JVM heap of
//!     its own, so that case is 80 % of physical memory;
//!   - vcores: logical processors (with
//!     `count-logical-processors-as-cores=true`) or physical cores from
//!     `/proc/cpuinfo`, scaled by `percentage-physical-cpu-limit` / 100 and by
//!     `pcores-vcores-multiplier`, rounded (a result strictly between 0 and 1
//!     becomes 1).

use std::collections::BTreeSet;

/// Hadoop's `DEFAULT_NM_PMEM_MB`: memory offered when nothing is configured.
pub const DEFAULT_MEMORY_MB: i64 = 8192;
/// Hadoop's `DEFAULT_NM_VCORES`: vcores offered when nothing is configured.
pub const DEFAULT_VCORES: i32 = 8;
/// Share of physical memory given to containers when detection is on and no
/// system reservation is configured.
pub const DETECTED_MEMORY_FRACTION: f64 = 0.8;

/// What was read from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostHardware {
    /// Usable physical memory in MB (see [`parse_meminfo`]).
    pub physical_memory_mb: i64,
    /// Logical processors ("processor" lines in `/proc/cpuinfo`).
    pub logical_processors: i32,
    /// Distinct (physical id, core id) pairs; 1 when `/proc/cpuinfo` lists none.
    pub physical_cores: i32,
}

impl HostHardware {
    /// Reads `/proc/meminfo` and `/proc/cpuinfo`.
    ///
    /// When `/proc/cpuinfo` has no "processor" lines (some virtualised or
    /// non-x86 kernels), the processor count falls back to the number of CPUs
    /// this process may run on.
    pub fn detect() -> Result<HostHardware, String> {
        let meminfo = std::fs::read_to_string("/proc/meminfo")
            .map_err(|e| format!("cannot read /proc/meminfo: {e}"))?;
        let physical_bytes = parse_meminfo(&meminfo)?;
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo")
            .map_err(|e| format!("cannot read /proc/cpuinfo: {e}"))?;
        let mut cpus = parse_cpuinfo(&cpuinfo);
        if cpus.logical_processors == 0 {
            let n = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
            let n = i32::try_from(n).unwrap_or(i32::MAX);
            cpus.logical_processors = n;
            cpus.physical_cores = n;
        }
        Ok(HostHardware {
            physical_memory_mb: i64::try_from(physical_bytes / (1024 * 1024)).unwrap_or(i64::MAX),
            logical_processors: cpus.logical_processors,
            physical_cores: cpus.physical_cores,
        })
    }
}

/// Processor counts parsed from `/proc/cpuinfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuCounts {
    pub logical_processors: i32,
    pub physical_cores: i32,
}

/// Physical memory in bytes from the text of `/proc/meminfo`:
/// `MemTotal − HardwareCorrupted − HugePages_Total × Hugepagesize`
/// (the kB figures are 1024-byte units). Memory held in the huge-page pool
/// or lost to hardware faults cannot be handed to ordinary processes.
pub fn parse_meminfo(text: &str) -> Result<u64, String> {
    let mut mem_total_kb = None;
    let mut corrupted_kb = 0u64;
    let mut huge_pages = 0u64;
    let mut huge_page_kb = 0u64;
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(value) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        match name.trim() {
            "MemTotal" => mem_total_kb = Some(value),
            "HardwareCorrupted" => corrupted_kb = value,
            "HugePages_Total" => huge_pages = value,
            "Hugepagesize" => huge_page_kb = value,
            _ => {}
        }
    }
    let total = mem_total_kb.ok_or("/proc/meminfo has no MemTotal line")?;
    let reserved = corrupted_kb.saturating_add(huge_pages.saturating_mul(huge_page_kb));
    Ok(total.saturating_sub(reserved).saturating_mul(1024))
}

/// Counts logical processors and physical cores in the text of
/// `/proc/cpuinfo`. A core is a distinct ("physical id", "core id") pair; a
/// file without "core id" lines counts as one core, as Hadoop does.
pub fn parse_cpuinfo(text: &str) -> CpuCounts {
    let mut processors = 0i32;
    let mut physical_id = "";
    let mut cores: BTreeSet<(String, String)> = BTreeSet::new();
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim() {
            "processor" => processors = processors.saturating_add(1),
            "physical id" => physical_id = value,
            "core id" => {
                cores.insert((physical_id.to_string(), value.to_string()));
            }
            _ => {}
        }
    }
    CpuCounts {
        logical_processors: processors,
        physical_cores: i32::try_from(cores.len()).unwrap_or(i32::MAX).max(1),
    }
}

/// The resource-related settings, as read from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSettings {
    /// `yarn.nodemanager.resource.memory-mb` (−1 = not set).
    pub memory_mb: i64,
    /// `yarn.nodemanager.resource.cpu-vcores` (−1 = not set).
    pub vcores: i32,
    /// `yarn.nodemanager.resource.detect-hardware-capabilities`.
    pub detect_hardware: bool,
    /// `yarn.nodemanager.resource.system-reserved-memory-mb` (−1 = not set).
    pub system_reserved_memory_mb: i64,
    /// `yarn.nodemanager.resource.count-logical-processors-as-cores`.
    pub count_logical_processors_as_cores: bool,
    /// `yarn.nodemanager.resource.pcores-vcores-multiplier`.
    pub pcores_vcores_multiplier: f64,
    /// `yarn.nodemanager.resource.percentage-physical-cpu-limit`.
    pub physical_cpu_limit_percent: i32,
}

impl Default for ResourceSettings {
    fn default() -> Self {
        ResourceSettings {
            memory_mb: -1,
            vcores: -1,
            detect_hardware: false,
            system_reserved_memory_mb: -1,
            count_logical_processors_as_cores: false,
            pcores_vcores_multiplier: 1.0,
            physical_cpu_limit_percent: 100,
        }
    }
}

/// A resource setting that cannot be used; `key` is the configuration key to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceError {
    pub key: &'static str,
    pub message: String,
}

pub const KEY_MEMORY_MB: &str = "yarn.nodemanager.resource.memory-mb";
pub const KEY_VCORES: &str = "yarn.nodemanager.resource.cpu-vcores";
pub const KEY_DETECT: &str = "yarn.nodemanager.resource.detect-hardware-capabilities";
pub const KEY_SYSTEM_RESERVED_MB: &str = "yarn.nodemanager.resource.system-reserved-memory-mb";
pub const KEY_COUNT_LOGICAL: &str = "yarn.nodemanager.resource.count-logical-processors-as-cores";
pub const KEY_MULTIPLIER: &str = "yarn.nodemanager.resource.pcores-vcores-multiplier";
pub const KEY_CPU_LIMIT: &str = "yarn.nodemanager.resource.percentage-physical-cpu-limit";

/// Memory offered to containers, in MB. `hardware` is only consulted when
/// detection is on and no value is configured; pass `None` when the host
/// could not be read (Hadoop then uses the fixed default).
pub fn node_memory_mb(
    settings: &ResourceSettings,
    hardware: Option<&HostHardware>,
) -> Result<i64, ResourceError> {
    let memory = match (settings.memory_mb, settings.detect_hardware, hardware) {
        (-1, true, Some(hw)) => {
            let physical = hw.physical_memory_mb;
            let reserved = settings.system_reserved_memory_mb;
            let containers = if reserved != -1 {
                physical.saturating_sub(reserved)
            } else {
                (DETECTED_MEMORY_FRACTION * physical as f64) as i64
            };
            if containers <= 0 {
                return Err(ResourceError {
                    key: KEY_SYSTEM_RESERVED_MB,
                    message: format!(
                        "the node has {physical} MB of physical memory and {reserved} MB is \
                         reserved for the system, which leaves nothing for containers; lower \
                         {KEY_SYSTEM_RESERVED_MB} or set {KEY_MEMORY_MB}"
                    ),
                });
            }
            containers
        }
        (-1, _, _) => DEFAULT_MEMORY_MB,
        (configured, _, _) => configured,
    };
    if memory <= 0 {
        return Err(ResourceError {
            key: KEY_MEMORY_MB,
            message: format!("value {memory} must be greater than 0 (or -1 for the default)"),
        });
    }
    Ok(memory)
}

/// Vcores offered to containers. Same conventions as [`node_memory_mb`].
pub fn node_vcores(
    settings: &ResourceSettings,
    hardware: Option<&HostHardware>,
) -> Result<i32, ResourceError> {
    let vcores = match (settings.vcores, settings.detect_hardware, hardware) {
        (-1, true, Some(hw)) => {
            let limit = settings.physical_cpu_limit_percent.clamp(0, 100);
            if limit == 0 {
                return Err(ResourceError {
                    key: KEY_CPU_LIMIT,
                    message: format!(
                        "value {} must be greater than 0",
                        settings.physical_cpu_limit_percent
                    ),
                });
            }
            let multiplier = settings.pcores_vcores_multiplier;
            if !multiplier.is_finite() || multiplier <= 0.0 {
                return Err(ResourceError {
                    key: KEY_MULTIPLIER,
                    message: format!("value {multiplier} must be greater than 0"),
                });
            }
            let cpus = if settings.count_logical_processors_as_cores {
                hw.logical_processors
            } else {
                hw.physical_cores
            };
            let usable = f64::from(limit) * f64::from(cpus) / 100.0;
            let scaled = usable * multiplier;
            if scaled > 0.0 && scaled < 1.0 {
                1
            } else {
                // Hadoop rounds half up (Math.round).
                let rounded = (scaled + 0.5).floor();
                if rounded >= f64::from(i32::MAX) {
                    i32::MAX
                } else {
                    rounded as i32
                }
            }
        }
        (-1, _, _) => DEFAULT_VCORES,
        (configured, _, _) => configured,
    };
    if vcores <= 0 {
        return Err(ResourceError {
            key: KEY_VCORES,
            message: format!("value {vcores} must be greater than 0 (or -1 for the default)"),
        });
    }
    Ok(vcores)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       16384000 kB\n\
        MemFree:         1000000 kB\n\
        HardwareCorrupted:   1024 kB\n\
        HugePages_Total:       4\n\
        Hugepagesize:       2048 kB\n";

    fn hw(memory_mb: i64, logical: i32, cores: i32) -> HostHardware {
        HostHardware {
            physical_memory_mb: memory_mb,
            logical_processors: logical,
            physical_cores: cores,
        }
    }

    #[test]
    fn meminfo_subtracts_corrupted_and_huge_pages() {
        let bytes = parse_meminfo(MEMINFO).expect("parses");
        assert_eq!(bytes, (16_384_000 - 1024 - 4 * 2048) * 1024);
    }

    #[test]
    fn meminfo_without_total_is_an_error() {
        let err = parse_meminfo("MemFree: 10 kB\n").expect_err("no MemTotal");
        assert!(err.contains("MemTotal"), "{err}");
    }

    #[test]
    fn cpuinfo_counts_processors_and_distinct_cores() {
        let text = "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 1\nphysical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 2\nphysical id\t: 1\ncore id\t\t: 0\n\n\
                    processor\t: 3\nphysical id\t: 1\ncore id\t\t: 1\n";
        assert_eq!(
            parse_cpuinfo(text),
            CpuCounts {
                logical_processors: 4,
                physical_cores: 3
            }
        );
        let no_cores = parse_cpuinfo("processor : 0\nprocessor : 1\n");
        assert_eq!(no_cores.logical_processors, 2);
        assert_eq!(no_cores.physical_cores, 1);
    }

    #[test]
    fn defaults_without_detection() {
        let s = ResourceSettings::default();
        let host = hw(64_000, 32, 16);
        assert_eq!(node_memory_mb(&s, Some(&host)), Ok(8192));
        assert_eq!(node_vcores(&s, Some(&host)), Ok(8));
    }

    #[test]
    fn configured_values_win_over_detection() {
        let s = ResourceSettings {
            memory_mb: 4096,
            vcores: 3,
            detect_hardware: true,
            ..ResourceSettings::default()
        };
        let host = hw(64_000, 32, 16);
        assert_eq!(node_memory_mb(&s, Some(&host)), Ok(4096));
        assert_eq!(node_vcores(&s, Some(&host)), Ok(3));
    }

    #[test]
    fn detected_memory_uses_reservation_or_fraction() {
        let mut s = ResourceSettings {
            detect_hardware: true,
            ..ResourceSettings::default()
        };
        let host = hw(10_000, 4, 2);
        assert_eq!(node_memory_mb(&s, Some(&host)), Ok(8000));
        s.system_reserved_memory_mb = 1500;
        assert_eq!(node_memory_mb(&s, Some(&host)), Ok(8500));
        s.system_reserved_memory_mb = 20_000;
        let err = node_memory_mb(&s, Some(&host)).expect_err("nothing left");
        assert_eq!(err.key, KEY_SYSTEM_RESERVED_MB);
    }

    #[test]
    fn detection_without_readable_host_falls_back_to_defaults() {
        let s = ResourceSettings {
            detect_hardware: true,
            ..ResourceSettings::default()
        };
        assert_eq!(node_memory_mb(&s, None), Ok(DEFAULT_MEMORY_MB));
        assert_eq!(node_vcores(&s, None), Ok(DEFAULT_VCORES));
    }

    #[test]
    fn detected_vcores_follow_core_counting_limit_and_multiplier() {
        let mut s = ResourceSettings {
            detect_hardware: true,
            ..ResourceSettings::default()
        };
        let host = hw(10_000, 8, 4);
        assert_eq!(node_vcores(&s, Some(&host)), Ok(4));
        s.count_logical_processors_as_cores = true;
        assert_eq!(node_vcores(&s, Some(&host)), Ok(8));
        s.pcores_vcores_multiplier = 1.5;
        assert_eq!(node_vcores(&s, Some(&host)), Ok(12));
        s.physical_cpu_limit_percent = 50;
        assert_eq!(node_vcores(&s, Some(&host)), Ok(6));
        // 1 core × 10 % × 1.5 = 0.15 → at least one vcore.
        s.physical_cpu_limit_percent = 10;
        assert_eq!(node_vcores(&s, Some(&hw(1000, 1, 1))), Ok(1));
        // 3 × 0.5 = 1.5 rounds half up.
        s.physical_cpu_limit_percent = 100;
        s.pcores_vcores_multiplier = 0.5;
        assert_eq!(node_vcores(&s, Some(&hw(1000, 3, 3))), Ok(2));
    }

    #[test]
    fn invalid_values_name_their_key() {
        let s = ResourceSettings {
            memory_mb: 0,
            vcores: -5,
            ..ResourceSettings::default()
        };
        assert_eq!(
            node_memory_mb(&s, None).expect_err("0 MB").key,
            KEY_MEMORY_MB
        );
        assert_eq!(node_vcores(&s, None).expect_err("-5").key, KEY_VCORES);

        let host = hw(1000, 2, 2);
        let bad_multiplier = ResourceSettings {
            detect_hardware: true,
            pcores_vcores_multiplier: 0.0,
            ..ResourceSettings::default()
        };
        assert_eq!(
            node_vcores(&bad_multiplier, Some(&host))
                .expect_err("multiplier")
                .key,
            KEY_MULTIPLIER
        );
        let bad_limit = ResourceSettings {
            detect_hardware: true,
            physical_cpu_limit_percent: 0,
            ..ResourceSettings::default()
        };
        assert_eq!(
            node_vcores(&bad_limit, Some(&host)).expect_err("limit").key,
            KEY_CPU_LIMIT
        );
    }

    #[test]
    fn this_host_can_be_read() {
        let host = HostHardware::detect().expect("a Linux host exposes /proc");
        assert!(host.physical_memory_mb > 0);
        assert!(host.logical_processors >= 1);
        assert!(host.physical_cores >= 1);
    }
}
