//! Confirmation over MCP: who answers a command's "are you sure?" during a tool
//! call. On protocols up to 2025-11-25 the host's user is asked through
//! `elicitation/create` ([`Elicitation`]); on 2026-07-28 the question goes back to
//! the client in an `InputRequiredResult` with a sealed request state, and the call
//! that resumes with the answer must carry that state unused, for the same argv,
//! working directory and policy. A client that cannot be asked gets
//! `needs_confirmation` and may call again with `confirm: true`. The policy itself,
//! and what a confirmation allows, are decided by the command tree.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::{Server, modern};
use crate::context::{Answer, Context, Human};
use crate::error::{Failure, Reason};
use crate::next::Next;
use crate::policy::Policies;

/// How long a person has to answer a confirmation through the host.
const ELICIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a sealed confirmation state (2026-07-28) stays valid.
const STATE_TTL: Duration = Duration::from_secs(600);

/// Seals and opens confirmation states (2026-07-28) with a key only this process
/// holds; shared by every session of a server, so a state sealed in one is spent
/// in all.
pub(crate) struct Seals {
    /// `None` when the system gives no randomness: then nothing is sealed.
    codec: Option<RequestStateCodec>,
    /// Nonces of sealed states already used, with when they expire.
    used: Mutex<HashMap<String, Instant>>,
    nonces: AtomicU64,
}

impl Seals {
    /// Seals with a fresh key.
    pub(crate) fn new() -> Self {
        Self {
            codec: random_bytes(32).and_then(|key| RequestStateCodec::try_new(key).ok()),
            used: Mutex::default(),
            nonces: AtomicU64::default(),
        }
    }

    /// Whether states can be sealed at all.
    fn available(&self) -> bool {
        self.codec.is_some()
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
        let codec = self.codec.as_ref()?;
        let nonce = self.nonces.fetch_add(1, Ordering::Relaxed).to_string();
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
        let Some(codec) = self.codec.as_ref() else {
            return false;
        };
        let context = sealed_context(ctx, subject, argv, policies);
        let Ok(sealed) = codec.open_json_with::<Sealed>(state, &context) else {
            return false;
        };
        let Ok(mut used) = self.used.lock() else {
            return false;
        };
        used.retain(|_, expires| *expires > Instant::now());
        used.insert(sealed.nonce, Instant::now() + STATE_TTL).is_none()
    }
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
/// call: the argv, the working directory, the policy in force (what both policy
/// files say, as the call read them once: the very policy its command decides by)
/// and the OAuth caller's subject, so that no other subject can answer for it.
fn sealed_context(ctx: &Context, subject: Option<&str>, argv: &[String], policies: &Policies) -> Vec<u8> {
    let mut context = argv.join("\0").into_bytes();
    context.push(0);
    context.extend(ctx.cwd.display().to_string().into_bytes());
    context.push(0);
    context.extend(policies.in_force());
    context.push(0);
    match subject {
        Some(subject) => {
            context.push(b's');
            context.extend(subject.as_bytes());
        }
        None => context.push(b'-'),
    }
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
