//! Confirmation over MCP: who answers a command's "are you sure?" during a tool
//! call. On protocols up to 2025-11-25 the host's user is asked through
//! `elicitation/create` ([`Elicitation`]); on 2026-07-28 the question goes back to
//! the client in an `InputRequiredResult` with a sealed request state, and the call
//! that resumes with the answer must carry that state unused, for the same argv,
//! working directory and policy, and the same OAuth subject. A client that cannot
//! be asked gets `needs_confirmation` and may call again with `confirm: true`. The
//! policy itself, and what a confirmation allows, are decided by the command tree.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::keys::StateKeys;
use super::{Server, modern};
use crate::context::{Answer, Context, Human};
use crate::error::{Failure, Reason};
use crate::next::Next;
use crate::policy::Policies;

/// How long a person has to answer a confirmation through the host.
const ELICIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a sealed confirmation state (2026-07-28) stays valid.
const STATE_TTL: Duration = Duration::from_secs(600);

/// Seals and opens confirmation states (2026-07-28). The key is one only this
/// process holds, or the keys of the state key file that every replica of a server
/// reads ([`StateKeys`]); shared by every session of a server, so that a state
/// sealed in one is spent in all, and, with the key file, in every replica that
/// shares `$HCP_HOME`.
pub(crate) struct Seals {
    keys: SealKeys,
    spent: Spent,
}

/// Where the sealing keys come from.
enum SealKeys {
    /// A key made at start; `None` when the system gives no randomness: then
    /// nothing is sealed.
    Process(Option<Arc<RequestStateCodec>>),
    /// The state key file.
    File(Arc<StateKeys>),
}

/// Where the nonces of used states are kept, each until its state has expired.
enum Spent {
    /// In this process.
    Memory(Mutex<HashMap<String, Instant>>),
    /// One empty file per nonce in this folder of `$HCP_HOME`, made with
    /// `O_EXCL`: replicas that share the folder spend a state once among them.
    Disk(PathBuf),
}

impl Seals {
    /// Seals with a fresh key of this process's.
    pub(crate) fn new() -> Self {
        Self {
            keys: SealKeys::Process(
                random_bytes(32)
                    .and_then(|key| RequestStateCodec::try_new(key).ok())
                    .map(Arc::new),
            ),
            spent: Spent::Memory(Mutex::default()),
        }
    }

    /// Seals with the keys of the state key file, and keeps used nonces in `spent`
    /// (a folder of `$HCP_HOME`).
    pub(crate) fn shared(keys: Arc<StateKeys>, spent: PathBuf) -> Self {
        Self {
            keys: SealKeys::File(keys),
            spent: Spent::Disk(spent),
        }
    }

    fn codec(&self) -> Option<Arc<RequestStateCodec>> {
        match &self.keys {
            SealKeys::Process(codec) => codec.clone(),
            SealKeys::File(keys) => Some(keys.codec()),
        }
    }

    /// Whether states can be sealed at all.
    fn available(&self) -> bool {
        match &self.keys {
            SealKeys::Process(codec) => codec.is_some(),
            SealKeys::File(_) => true,
        }
    }

    /// Whether the keys in force can be read as they are now (the server's
    /// readiness); why not when they cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        match &self.keys {
            SealKeys::Process(_) => Ok(()),
            SealKeys::File(keys) => keys.check().map_err(|error| error.to_string()),
        }
    }

    /// A state for this argv in `ctx` under `policies`, for `subject`, good once
    /// and for [`STATE_TTL`].
    fn seal(
        &self,
        ctx: &Context,
        subject: Option<&str>,
        argv: &[String],
        policies: &Policies,
    ) -> Option<String> {
        let codec = self.codec()?;
        // Random, not counted: replicas sealing with one key never make the same.
        let nonce = hex(&random_bytes(16)?);
        let context = sealed_context(ctx, subject, argv, policies);
        let options = SealOptions::new().associated_data(&context).ttl(STATE_TTL);
        codec.seal_json_with(&Sealed { nonce }, &options).ok()
    }

    /// Opens a sealed state for this very argv in `ctx`, once. Any failure is one
    /// answer.
    fn open(
        &self,
        state: &str,
        ctx: &Context,
        subject: Option<&str>,
        argv: &[String],
        policies: &Policies,
    ) -> bool {
        let Some(codec) = self.codec() else {
            return false;
        };
        let context = sealed_context(ctx, subject, argv, policies);
        let Ok(sealed) = codec.open_json_with::<Sealed>(state, &context) else {
            return false;
        };
        self.spend(&sealed.nonce)
    }

    /// Records `nonce` as used; false when it already was (or cannot be recorded).
    fn spend(&self, nonce: &str) -> bool {
        match &self.spent {
            Spent::Memory(used) => {
                let Ok(mut used) = used.lock() else {
                    return false;
                };
                used.retain(|_, expires| *expires > Instant::now());
                used.insert(nonce.to_owned(), Instant::now() + STATE_TTL)
                    .is_none()
            }
            Spent::Disk(folder) => spend_on_disk(folder, nonce),
        }
    }
}

/// Records `nonce` as a file of its own in `folder` (made if need be), unless it is
/// there: `O_EXCL` makes one replica of those sharing the folder the first. Records
/// older than a state lives are removed on the way. Fails closed.
fn spend_on_disk(folder: &Path, nonce: &str) -> bool {
    // The nonce was sealed by a replica, so it is one of ours; checked all the same,
    // since it becomes a file name.
    if nonce.len() != 32 || !nonce.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return false;
    }
    if let Err(error) = crate::state::ensure_home(folder) {
        tracing::warn!("a confirmation cannot be recorded as used: {error}");
        return false;
    }
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let old = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > STATE_TTL);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(folder.join(nonce))
    {
        Ok(_) => true,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(error) => {
            tracing::warn!(
                "a confirmation cannot be recorded as used in {}: {error}",
                folder.display()
            );
            false
        }
    }
}

/// Lowercase hexadecimal digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `len` random bytes (a sealing key, a task id), or `None` when the system gives
/// no randomness (then the server falls back to `needs_confirmation` and
/// `confirm: true`, and makes no tasks).
pub(super) fn random_bytes(len: usize) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut key = vec![0_u8; len];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut key))
        .ok()?;
    Some(key)
}

/// The associated data a state is sealed with, so that it opens only for the same
/// call of the same caller: the OAuth caller's subject (first, tagged and with its
/// length, so that no subject, whatever bytes it holds, reads as another or as
/// none: no other subject can answer for it), the argv, the working directory and
/// the policy in force (what both policy files say, as the call read them once: the
/// very policy its command decides by).
fn sealed_context(ctx: &Context, subject: Option<&str>, argv: &[String], policies: &Policies) -> Vec<u8> {
    let mut context = Vec::new();
    match subject {
        Some(subject) => {
            context.push(b's');
            context.extend((subject.len() as u64).to_be_bytes());
            context.extend(subject.as_bytes());
        }
        None => context.push(b'-'),
    }
    context.extend(argv.join("\0").into_bytes());
    context.push(0);
    context.extend(ctx.cwd.display().to_string().into_bytes());
    context.push(0);
    context.extend(policies.in_force());
    context
}

/// What a sealed confirmation state carries.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    nonce: String,
}

/// Who answers one call's confirmation, if the client can be asked at all.
#[derive(Default)]
pub(crate) struct Confirmation {
    /// The call's human; `None` leaves the server's (nobody: `needs_confirmation`).
    pub(crate) human: Option<Arc<dyn Human>>,
    /// Set when the question is to be deferred to the client (2026-07-28).
    deferred: Option<Arc<Deferred>>,
}

impl Server {
    /// Who answers `argv`'s confirmation in this request. `resume` is the client's
    /// answer to an earlier `InputRequiredResult`; a state that does not open for
    /// this argv under `policies` is refused, and nothing runs.
    pub(crate) fn confirmation(
        &self,
        request: &RequestContext<RoleServer>,
        resume: Option<(&InputResponses, &str)>,
        argv: &[String],
        policies: &Policies,
        subject: Option<&str>,
    ) -> Result<Confirmation, Failure> {
        if !modern(request) {
            if request
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form)
            {
                return Ok(Confirmation {
                    human: Some(Arc::new(Elicitation {
                        peer: request.peer.clone(),
                    })),
                    deferred: None,
                });
            }
            return Ok(Confirmation::default());
        }
        let elicits = request
            .client_capabilities()
            .is_some_and(|caps| caps.elicitation.is_some());
        if !elicits || !self.seals.available() {
            return Ok(Confirmation::default());
        }
        match resume {
            Some((responses, state)) => {
                if !self.seals.open(state, &self.base, subject, argv, policies) {
                    return Err(Failure::new(
                        Reason::NeedsConfirmation,
                        "that confirmation is expired, altered, for another command or already used; \
                         nothing ran",
                    )
                    .next(Next::advice("call again without inputResponses to be asked anew")));
                }
                let answer = responses
                    .get("confirm")
                    .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
                    .map_or(Answer::No, |result| answer(&result));
                Ok(Confirmation {
                    human: Some(Arc::new(Answered(answer))),
                    deferred: None,
                })
            }
            None => {
                let asker = Arc::new(Deferred::default());
                Ok(Confirmation {
                    human: Some(asker.clone()),
                    deferred: Some(asker),
                })
            }
        }
    }

    /// The question `argv` deferred, as an `InputRequiredResult` whose sealed state
    /// the client sends back with the answer; `None` when nothing was asked (or no
    /// state can be sealed) and the call's own result stands.
    pub(crate) fn input_required(
        &self,
        confirmation: Confirmation,
        argv: &[String],
        policies: &Policies,
        subject: Option<&str>,
        plan: Option<&Value>,
    ) -> Option<InputRequiredResult> {
        let question = confirmation
            .deferred
            .and_then(|asker| asker.asked.lock().ok().and_then(|mut asked| asked.take()))?;
        let state = self.seals.seal(&self.base, subject, argv, policies)?;
        let plan = plan.map(ToString::to_string).unwrap_or_default();
        let params = confirm_params(format!("{question}\nPlan: {plan}"))?;
        let mut requests = InputRequests::new();
        requests.insert(
            "confirm".to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }
}

/// The form that asks the host's user `question`: one required boolean, `confirm`.
fn confirm_params(question: String) -> Option<ElicitRequestParams> {
    let schema = ElicitationSchema::builder()
        .required_bool("confirm")
        .build()
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("{question}\nhcpx asks you, the person using this host, to confirm."),
        requested_schema: schema,
    })
}

/// The answer a filled-in form gives: yes only when accepted with `confirm` true.
fn answer(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept
            if result
                .content
                .as_ref()
                .and_then(|content| content["confirm"].as_bool())
                == Some(true) =>
        {
            Answer::Yes
        }
        ElicitationAction::Cancel => Answer::Cancelled,
        _ => Answer::No,
    }
}

/// Defers the question into an `InputRequiredResult` (2026-07-28).
#[derive(Default)]
struct Deferred {
    asked: Mutex<Option<String>>,
}

impl Human for Deferred {
    fn confirm<'a>(&'a self, question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        if let Ok(mut asked) = self.asked.lock() {
            *asked = Some(question.to_owned());
        }
        Box::pin(async { Answer::Later })
    }
}

/// The host's user's answer, already given and verified.
struct Answered(Answer);

impl Human for Answered {
    fn confirm<'a>(&'a self, _question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        let answer = self.0;
        Box::pin(async move { answer })
    }
}

/// Asks the host's user through `elicitation/create` (protocols up to 2025-11-25).
struct Elicitation {
    peer: Peer<RoleServer>,
}

impl Human for Elicitation {
    fn confirm<'a>(&'a self, question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            let Some(params) = confirm_params(question.to_owned()) else {
                return Answer::No;
            };
            match self
                .peer
                .create_elicitation_with_timeout(params, Some(ELICIT_TIMEOUT))
                .await
            {
                Ok(result) => answer(&result),
                Err(_) => Answer::No,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Layer, Policies};

    const KEY: &str = "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=";

    fn ctx() -> Context {
        Context::new([("HOME".to_owned(), "/h".to_owned())], "/w".into(), false).unwrap()
    }

    fn policies() -> Policies {
        Policies {
            user: Layer::Absent,
            project: Layer::Absent,
        }
    }

    /// Two replicas: the same key file, the same `$HCP_HOME`.
    fn replicas(dir: &Path) -> (Seals, Seals) {
        let keys = dir.join("keys");
        std::fs::write(&keys, format!("k1 {KEY}\n")).unwrap();
        let replica = || {
            Seals::shared(
                Arc::new(StateKeys::load(&keys).unwrap()),
                dir.join("home/mcp/spent"),
            )
        };
        (replica(), replica())
    }

    #[test]
    fn a_state_sealed_by_one_replica_opens_once_on_any() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = replicas(dir.path());
        let argv = vec!["exec".to_owned(), "p".to_owned(), "c".to_owned()];
        let state = first.seal(&ctx(), None, &argv, &policies()).unwrap();
        let other = first.seal(&ctx(), None, &argv, &policies()).unwrap();
        assert!(
            second.open(&state, &ctx(), None, &argv, &policies()),
            "asked on one, answered on another"
        );
        assert!(
            !first.open(&state, &ctx(), None, &argv, &policies()),
            "used once among them"
        );
        assert!(!second.open(&state, &ctx(), None, &argv, &policies()));
        let mut elsewhere = argv.clone();
        elsewhere.push("x=1".to_owned());
        assert!(
            !first.open(&other, &ctx(), None, &elsewhere, &policies()),
            "another argv"
        );
        assert!(first.open(&other, &ctx(), None, &argv, &policies()));
        // A replica with a key of its own opens nothing of theirs.
        let alone = Seals::new();
        let third = first.seal(&ctx(), None, &argv, &policies()).unwrap();
        assert!(!alone.open(&third, &ctx(), None, &argv, &policies()));
    }

    #[test]
    fn used_states_are_files_named_by_their_nonce_only() {
        let dir = tempfile::tempdir().unwrap();
        let spent = dir.path().join("spent");
        assert!(spend_on_disk(&spent, "0123456789abcdef0123456789abcdef"));
        assert!(!spend_on_disk(&spent, "0123456789abcdef0123456789abcdef"));
        assert!(spent.join("0123456789abcdef0123456789abcdef").is_file());
        for bad in ["../x", "", "0123456789abcdef0123456789abcdeg", "1"] {
            assert!(!spend_on_disk(&spent, bad), "{bad}");
        }
    }

    /// A confirmation asked by one OAuth subject is answered by that subject only,
    /// on any replica: another subject's answer (or a caller's without one) opens
    /// nothing and spends nothing, so the asker can still answer it; nor does a
    /// state sealed for no subject open for a subject.
    #[test]
    fn a_state_opens_only_for_the_subject_it_was_asked_by() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = replicas(dir.path());
        let argv = vec!["exec".to_owned(), "p".to_owned(), "c".to_owned()];
        let alices = first.seal(&ctx(), Some("alice"), &argv, &policies()).unwrap();
        for intruder in [Some("bob"), Some("Alice"), Some(""), None] {
            assert!(
                !second.open(&alices, &ctx(), intruder, &argv, &policies()),
                "{intruder:?} answered alice's"
            );
            assert!(!first.open(&alices, &ctx(), intruder, &argv, &policies()));
        }
        assert!(
            second.open(&alices, &ctx(), Some("alice"), &argv, &policies()),
            "alice answers on another replica"
        );
        assert!(!first.open(&alices, &ctx(), Some("alice"), &argv, &policies()));
        let anyones = first.seal(&ctx(), None, &argv, &policies()).unwrap();
        assert!(!second.open(&anyones, &ctx(), Some("alice"), &argv, &policies()));
        assert!(second.open(&anyones, &ctx(), None, &argv, &policies()));
        // One process's own key binds the subject too.
        let alone = Seals::new();
        let state = alone.seal(&ctx(), Some("alice"), &argv, &policies()).unwrap();
        assert!(!alone.open(&state, &ctx(), Some("bob"), &argv, &policies()));
        assert!(alone.open(&state, &ctx(), Some("alice"), &argv, &policies()));
    }

    /// The subject's bytes cannot pass for another subject's, nor for the argv's.
    #[test]
    fn no_subject_reads_as_another_in_the_sealed_context() {
        let argv = |words: &[&str]| words.iter().map(|word| (*word).to_owned()).collect::<Vec<_>>();
        let contexts = [
            sealed_context(&ctx(), None, &argv(&["exec", "p"]), &policies()),
            sealed_context(&ctx(), Some(""), &argv(&["exec", "p"]), &policies()),
            sealed_context(&ctx(), Some("a"), &argv(&["exec", "p"]), &policies()),
            sealed_context(&ctx(), Some("a\0exec"), &argv(&["p"]), &policies()),
            sealed_context(&ctx(), Some("-exec"), &argv(&["p"]), &policies()),
        ];
        for (i, one) in contexts.iter().enumerate() {
            for other in &contexts[i + 1..] {
                assert_ne!(one, other);
            }
        }
    }
}
