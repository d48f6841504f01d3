//! Wall-clock time as Hadoop counts it, in epoch milliseconds, and the
//! dates Hadoop writes from it.
//!
//! Hadoop's records and files carry times as a Java `long` of epoch
//! milliseconds (start and finish times, token expiry, file modification
//! times), and its web pages and timeouts write them as calendar dates in
//! several patterns. The daemons read the wall clock through [`wall_ms`]
//! and a file's time through [`epoch_ms`]; each date pattern is written
//! from a [`UtcTime`], built on [`civil_from_days`] (with
//! [`days_from_civil`] to read a date back). So the conversions and the
//! calendar arithmetic are written once. Monotonic time (intervals,
//! deadlines, liveness) is not here: each daemon keeps its own `Instant`s.
//!
//! ```
//! use spindle_common::time::{civil_from_days, days_from_civil};
//!
//! assert_eq!(civil_from_days(0), (1970, 1, 1));
//! assert_eq!(civil_from_days(19_782), (2024, 2, 29));
//! assert_eq!(days_from_civil(2024, 2, 29), 19_782);
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` in milliseconds since the Unix epoch, as the `long` Hadoop keeps
/// times in: 0 for a time before the epoch (a clock or a file system set
/// far back), `i64::MAX` for one too far ahead to count.
pub fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The wall clock now, in epoch milliseconds ([`epoch_ms`]). It may step
/// either way under NTP: measure intervals on a monotonic clock instead.
pub fn wall_ms() -> i64 {
    epoch_ms(SystemTime::now())
}

/// [`wall_ms`] for code that keeps wall times unsigned (the RM's clock and
/// its REST replies). Never negative, so nothing is lost.
pub fn wall_ms_u64() -> u64 {
    u64::try_from(wall_ms()).unwrap_or(0)
}

/// A moment broken into its calendar fields in UTC, from which each of
/// Hadoop's date patterns is written (`yyyy-MM-dd'T'HH:mm:ss.SSSZ` for
/// timeouts, `EEE MMM dd HH:mm:ss Z yyyy` on the NodeManager's pages, the
/// RM UI's `yyyy-MM-dd HH:mm:ss UTC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    /// 1-12.
    pub month: u32,
    /// 1-31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millisecond: u32,
    /// 0 for Sunday to 6 for Saturday.
    pub weekday: u32,
}

impl UtcTime {
    /// The moment `ms` milliseconds after the epoch (before it, for a
    /// negative `ms`).
    pub fn of_ms(ms: i64) -> UtcTime {
        const DAY_MS: i64 = 86_400_000;
        let days = ms.div_euclid(DAY_MS);
        // Within a day, so below 86,400,000: fits a u32.
        let in_day = ms.rem_euclid(DAY_MS) as u32;
        let (year, month, day) = civil_from_days(days);
        UtcTime {
            year,
            month,
            day,
            hour: in_day / 3_600_000,
            minute: in_day / 60_000 % 60,
            second: in_day / 1000 % 60,
            millisecond: in_day % 1000,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as u32,
        }
    }
}

/// The day `days` after 1970-01-01 as (year, month 1-12, day 1-31) in the
/// proleptic Gregorian calendar, negative days included (Howard Hinnant's
/// `civil_from_days`, exact for every `i64` a time in milliseconds can
/// give).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // Both are small and positive: a day of 1..=31, a month of 1..=12.
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The inverse of [`civil_from_days`]: the days from 1970-01-01 to
/// `year-month-day` (month 1-12, day 1-31; a day past the month's end
/// runs on into the next month).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (m, d) = (i64::from(month), i64::from(day));
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        // 2000 is a leap year (divisible by 400), 1900 and 2100 are not.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(
            civil_from_days(days_from_civil(2100, 2, 28) + 1),
            (2100, 3, 1)
        );
        assert_eq!(
            civil_from_days(days_from_civil(1900, 2, 28) + 1),
            (1900, 3, 1)
        );
        // 1_795_721_405_123 ms is 2026-11-26T19:30:05.123Z.
        assert_eq!(
            civil_from_days(1_795_721_405_123 / 86_400_000),
            (2026, 11, 26)
        );
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn days_and_dates_round_trip_across_eras() {
        for days in (-1_000_000..1_000_000)
            .step_by(997)
            .chain([-719_468, 2_932_896])
        {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && (1..=31).contains(&d), "{days}");
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        // Consecutive days are consecutive dates.
        let mut prev = civil_from_days(-800);
        for days in -799..800 {
            let next = civil_from_days(days);
            assert!(next > prev, "{prev:?} then {next:?}");
            prev = next;
        }
    }

    #[test]
    fn moments_broken_into_fields() {
        // 2026-11-26T19:30:05.123Z, a Thursday.
        assert_eq!(
            UtcTime::of_ms(1_795_721_405_123),
            UtcTime {
                year: 2026,
                month: 11,
                day: 26,
                hour: 19,
                minute: 30,
                second: 5,
                millisecond: 123,
                weekday: 4,
            }
        );
        // 2024-02-29T13:05:09.999Z, a Thursday, and the epoch, a Thursday.
        let t = UtcTime::of_ms(1_709_211_909_999);
        assert_eq!((t.year, t.month, t.day, t.weekday), (2024, 2, 29, 4));
        assert_eq!((t.hour, t.minute, t.second, t.millisecond), (13, 5, 9, 999));
        assert_eq!(UtcTime::of_ms(0).weekday, 4);
        assert_eq!(UtcTime::of_ms(86_400_000 * 3).weekday, 0);
        // One millisecond before the epoch: the last moment of 1969, a Wednesday.
        let t = UtcTime::of_ms(-1);
        assert_eq!((t.year, t.month, t.day, t.weekday), (1969, 12, 31, 3));
        assert_eq!(
            (t.hour, t.minute, t.second, t.millisecond),
            (23, 59, 59, 999)
        );
    }

    #[test]
    fn epoch_milliseconds_of_a_time() {
        assert_eq!(epoch_ms(UNIX_EPOCH), 0);
        assert_eq!(epoch_ms(UNIX_EPOCH + Duration::from_millis(1_500)), 1_500);
        // Before the epoch: 0, not a negative time.
        assert_eq!(epoch_ms(UNIX_EPOCH - Duration::from_secs(1)), 0);
        let before = wall_ms();
        assert!(before > 1_600_000_000_000, "the clock reads {before}");
        assert!(wall_ms_u64() >= before as u64);
    }
}
