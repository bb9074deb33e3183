//! Bad input: what is wrong and what to do. Always exit status 2, and nothing on disk changed.

use std::fmt;

#[derive(Debug)]
pub struct UserError {
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub fix: Option<String>,
}

impl UserError {
    pub fn new(problem: impl Into<String>) -> Self {
        UserError {
            problem: problem.into(),
            fix: None,
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.problem)?;
        if let Some(fix) = &self.fix {
            write!(f, "\n{fix}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UserError {}

pub type Result<T> = std::result::Result<T, UserError>;
