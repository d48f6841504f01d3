//! Hadoop's ISO 8601 times (`Times.formatISO8601` / `parseISO8601ToLocalTimeInMillis`,
//! the pattern `yyyy-MM-dd'T'HH:mm:ss.SSSZ`), as application timeouts carry
//! them: written in UTC (`+0000`), read with any `+HHMM`/`-HHMM` offset (or
//! `Z`, `+HH:MM`). Pure functions: no clock.

/// `ms` since the epoch as Hadoop writes it, in UTC.
pub fn format(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}+0000",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The epoch milliseconds of a time written `yyyy-MM-ddTHH:mm:ss.SSS±HHMM`;
/// `None` when it is not one (or is before the epoch).
pub fn parse(s: &str) -> Option<u64> {
    let s = s.trim();
    let (date, rest) = s.split_once('T')?;
    let mut parts = date.split('-');
    let y: i64 = num(parts.next()?, 4)?;
    let mo: i64 = num(parts.next()?, 2)?;
    let d: i64 = num(parts.next()?, 2)?;
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

/// Days since 1970-01-01 as (year, month, day) (Howard Hinnant's algorithm).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
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
