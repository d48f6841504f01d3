//! Hadoop's ISO 8601 times (`Times.formatISO8601` / `parseISO8601ToLocalTimeInMillis`,
//! the pattern `yyyy-MM-dd'T'HH:mm:ss.SSSZ`), as application timeouts carry
//! them: written in UTC (`+0000`), read with any `+HHMM`/`-HHMM` offset (or
//! `Z`, `+HH:MM`); and the times of Hadoop's messages (`Time.formatTime`). Pure functions: no clock. The calendar arithmetic is
//! `spindle_common::time`'s.

use spindle_common::time::{days_from_civil, UtcTime};

/// `ms` since the epoch as Hadoop writes it, in UTC.
pub fn format(ms: u64) -> String {
    let t = UtcTime::of_ms(i64::try_from(ms).unwrap_or(i64::MAX));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}+0000",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millisecond
    )
}

/// `ms` since the epoch as Hadoop's `Time.formatTime` writes it in its
/// messages (`yyyy-MM-dd HH:mm:ss,SSSZ`), in UTC.
pub fn format_log_time(ms: i64) -> String {
    let t = UtcTime::of_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}+0000",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millisecond
    )
}

/// The epoch milliseconds of a time written `yyyy-MM-ddTHH:mm:ss.SSS±HHMM`;
/// `None` when it is not one (or is before the epoch).
pub fn parse(s: &str) -> Option<u64> {
    let s = s.trim();
    let (date, rest) = s.split_once('T')?;
    let mut parts = date.split('-');
    let y: i64 = num(parts.next()?, 4)?;
    let mo = u32::try_from(num(parts.next()?, 2)?).ok()?;
    let d = u32::try_from(num(parts.next()?, 2)?).ok()?;
    if parts.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    // The zone starts at the first '+', '-' or 'Z' of the time part.
    let at = rest.find(['+', '-', 'Z'])?;
    let (time, zone) = rest.split_at(at);
    let (hms, frac) = time.split_once('.')?;
    let mut t = hms.split(':');
    let h: i64 = num(t.next()?, 2)?;
    let mi: i64 = num(t.next()?, 2)?;
    let sec: i64 = num(t.next()?, 2)?;
    if t.next().is_some() || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let millis: i64 = num(frac, 3)?;
    let offset_min = match zone {
        "Z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
            if digits.len() != 4 {
                return None;
            }
            let oh: i64 = num(&digits[..2], 2)?;
            let om: i64 = num(&digits[2..], 2)?;
            sign * (oh * 60 + om)
        }
    };
    let days = days_from_civil(y, mo, d);
    let ms = (((days * 24 + h) * 60 + mi - offset_min) * 60 + sec) * 1000 + millis;
    u64::try_from(ms).ok()
}

fn num(s: &str, len: usize) -> Option<i64> {
    if s.len() != len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hadoops_form_round_trips_and_offsets_are_applied() {
        // 2026-11-26T19:30:05.123Z
        let ms = 1_795_721_405_123;
        assert_eq!(format(ms), "2026-11-26T19:30:05.123+0000");
        assert_eq!(parse("2026-11-26T19:30:05.123+0000"), Some(ms));
        assert_eq!(parse("2026-11-26T20:30:05.123+0100"), Some(ms));
        assert_eq!(parse("2026-11-26T14:30:05.123-05:00"), Some(ms));
        assert_eq!(parse("2026-11-26T19:30:05.123Z"), Some(ms));
        assert_eq!(format(0), "1970-01-01T00:00:00.000+0000");
        assert_eq!(parse("2000-02-29T00:00:00.000+0000"), Some(951_782_400_000));
        for bad in [
            "",
            "tomorrow",
            "2026-11-26",
            "2026-11-26T19:30:05+0000",
            "2026-13-26T19:30:05.123+0000",
            "2026-11-26T25:30:05.123+0000",
            "1969-12-31T23:59:59.999+0000",
            "2026-11-26T19:30:05.123+00",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
