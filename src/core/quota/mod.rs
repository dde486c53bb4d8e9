//! RL.QUOTA: calendar quotas. At most `limit` units in each period of a
//! calendar unit (minute, hour, day, ISO week, month, year) on a zone's
//! local clock; the count starts from 0 when a period starts.

mod calendar;
mod zone;

#[allow(unused_imports)] // wired in by the glue
pub use calendar::{period, CalendarUnit};
#[allow(unused_imports)] // wired in by the glue
pub use zone::{tzdb_version, Zone, MAX_ZONE_NAME};
