//! The policy engine (the file format: docs/policy.md): a pure function from who is
//! calling, which command, its effect, the user's policy and the project's policy to
//! a [`Decision`] and the rule that made it. The most specific match wins within a file; across the two
//! files the stricter decision wins; a file that cannot be parsed denies everything.
//! Reading the files is [`load()`]'s job; [`evaluate()`] does no I/O.
//!
//! The parts: what a policy says (`rules`), why a file cannot be used (`error`),
//! reading the files (`load`), the decision (`evaluate`) and what `policy show`
//! lists (`show`).

mod error;
mod evaluate;
mod load;
mod rules;
mod show;

pub(crate) use evaluate::{Evaluation, RuleKind, RuleRef, access, evaluate, permits_any, read_only};
pub(crate) use load::{Layer, Policies, load, load_layer};
pub use rules::{Caller, Principal};
pub(crate) use rules::{Decision, Matcher, PolicyFile, Rule, Subject, Who};
pub(crate) use show::{ShownRule, show};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_callers;
