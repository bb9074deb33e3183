//! The judge as an instrument: its two comparisons agree, a correct loop passes whatever the seed, and a
//! grade can be replayed from its seed.

mod agreement;
mod replay;
mod seeds;
