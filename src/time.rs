//! Time for people: "now", how long ago, the local time. One home for them, so that every command
//! reads the clock and the time zone the same way (the zone by `jiff`: `TZ`, else the system's).

use std::time::SystemTime;

use crate::i18n::Lang;

/// Seconds since the Unix epoch at `time` (0 before it).
pub fn epoch_secs(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Seconds since the Unix epoch now.
pub fn now() -> u64 {
    epoch_secs(SystemTime::now())
}

/// When `time` (seconds since the Unix epoch) was, for a person: "just now", "5 minutes ago", ... and
/// past a day the local date and time.
pub fn ago(time: u64, lang: Lang) -> String {
    let secs = now().saturating_sub(time);
    match secs {
        0..60 => lang.t("time-just-now", &[]),
        60..120 => lang.t("time-minute-ago", &[]),
        120..3600 => lang.t("time-minutes-ago", &[("n", &(secs / 60))]),
        3600..7200 => lang.t("time-hour-ago", &[]),
        7200..86400 => lang.t("time-hours-ago", &[("n", &(secs / 3600))]),
        _ => local_time(time)
            .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_else(|| lang.t("time-days-ago", &[("n", &(secs / 86400))])),
    }
}

/// `time` (seconds since the Unix epoch) in the local time zone.
pub fn local_time(time: u64) -> Option<jiff::Zoned> {
    let stamp = jiff::Timestamp::from_second(i64::try_from(time).ok()?).ok()?;
    Some(stamp.to_zoned(jiff::tz::TimeZone::system()))
}

/// The local time of day now, `HH:MM:SS`.
pub fn clock_now() -> String {
    local_time(now())
        .map(|t| t.strftime("%H:%M:%S").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_people_say_them() {
        assert_eq!(ago(now(), Lang::En), "just now");
        assert_eq!(ago(now() - 5 * 60, Lang::En), "5 minutes ago");
        assert_eq!(ago(now() - 5 * 60, Lang::Zh), "5 分钟前");
        assert_eq!(ago(now() - 90, Lang::En), "1 minute ago");
        assert_eq!(ago(now() - 3 * 3600, Lang::En), "3 hours ago");
        let old = ago(now() - 3 * 86400, Lang::En);
        assert!(
            old.len() == "2025-01-02 14:03".len() && old.contains('-'),
            "{old}"
        );
        // A clock that went backwards is not "in the future".
        assert_eq!(ago(now() + 100, Lang::En), "just now");
    }

    #[test]
    fn local_time_is_a_calendar_date() {
        let t = local_time(now()).unwrap();
        assert!(t.year() >= 2024 && (1..=12).contains(&t.month()) && (1..=31).contains(&t.day()));
        assert_eq!(clock_now().len(), "12:03:04".len());
    }
}
