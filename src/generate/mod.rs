//! Generation: candidate retrieval for a task (and, as the generation issue lands, ATC generation,
//! attributable reflection and the search over attempts).

pub mod atc;
pub mod extract;
pub mod prompt;
pub mod reflect;
pub mod retrieve;
pub mod search;
