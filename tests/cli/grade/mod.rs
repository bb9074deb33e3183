//! `pi-course grade` and the commands around it (`hint`, `status`, `list`) on real practice directories,
//! one module per track.

mod hint_status;
mod rust;
mod typescript;
