//! Confirmation over MCP: who answers a command's "are you sure?" during a tool
//! call. On protocols up to 2025-11-25 the host's user is asked through
//! `elicitation/create` ([`Elicitation`]); on 2026-07-28 the question goes back to
//! the client in an `InputRequiredResult` with a sealed request state, and the call
//! that resumes with the answer must carry that state unused, for the same argv,
//! working directory and policy. A client that cannot be asked gets
//! `needs_confirmation` and may call again with `confirm: true`. The policy itself,
//! and what a confirmation allows, are decided by the command tree.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::{Server, modern};
use crate::context::{Answer, Human};
use crate::error::{Failure, Reason};

/// How long a person has to answer a confirmation through the host.
const ELICIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a sealed confirmation state (2026-07-28) stays valid.
const STATE_TTL: Duration = Duration::from_secs(600);

/// A fresh 32-byte key, or `None` when the system gives no randomness (then the
/// server falls back to `needs_confirmation` and `confirm: true`).
pub(crate) fn fresh_key() -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut key = vec![0_u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut key))
        .ok()?;
    Some(key)
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
    /// this argv is refused, and nothing runs.
    pub(crate) fn confirmation(
        &self,
        request: &RequestContext<RoleServer>,
        resume: Option<(&InputResponses, &str)>,
        argv: &[String],
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
        if !elicits || self.seal.is_none() {
            return Ok(Confirmation::default());
        }
        match resume {
            Some((responses, state)) => {
                if !self.open_state(state, argv) {
                    return Err(Failure::new(
                        Reason::NeedsConfirmation,
                        "that confirmation is expired, altered, for another command or already used; \
                         nothing ran",
                    )
                    .next("call again without inputResponses to be asked anew"));
                }
                let answer = responses
                    .get("confirm")
                    .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok());
                let answer = match answer {
                    Some(result) if accepted(&result) => Answer::Yes,
                    Some(result) if result.action == ElicitationAction::Cancel => Answer::Cancelled,
                    _ => Answer::No,
                };
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
        plan: Option<&Value>,
    ) -> Option<InputRequiredResult> {
        let question = confirmation
            .deferred
            .and_then(|asker| asker.asked.lock().ok().and_then(|mut asked| asked.take()))?;
        let state = self.seal_state(argv)?;
        let schema = ElicitationSchema::builder()
            .required_bool("confirm")
            .build()
            .ok()?;
        let plan = plan.map(ToString::to_string).unwrap_or_default();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "{question}\nPlan: {plan}\nhcpx asks you, the person using this host, to confirm."
            ),
            requested_schema: schema,
        };
        let mut requests = InputRequests::new();
        requests.insert(
            "confirm".to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }
}

/// A yes: accepted, with `confirm` true.
fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .and_then(|content| content["confirm"].as_bool())
            == Some(true)
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
            let Ok(schema) = ElicitationSchema::builder().required_bool("confirm").build() else {
                return Answer::No;
            };
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: format!("{question}\nhcpx asks you, the person using this host, to confirm."),
                requested_schema: schema,
            };
            match self
                .peer
                .create_elicitation_with_timeout(params, Some(ELICIT_TIMEOUT))
                .await
            {
                Ok(result) => match result.action {
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
                },
                Err(_) => Answer::No,
            }
        })
    }
}

impl Server {
    /// The associated data a state is sealed with, so that it opens only for the
    /// same call: the argv, the working directory and the policy in force (the
    /// contents of both policy files).
    fn sealed_context(&self, argv: &[String]) -> Vec<u8> {
        let read = |path: Option<std::path::PathBuf>| {
            path.and_then(|path| std::fs::read(path).ok()).unwrap_or_default()
        };
        let mut context = argv.join("\0").into_bytes();
        context.push(0);
        context.extend(self.base.cwd.display().to_string().into_bytes());
        context.push(0);
        context.extend(read(Some(self.base.user_policy_path())));
        context.push(0);
        context.extend(read(self.base.project_policy_path()));
        context
    }

    fn seal_state(&self, argv: &[String]) -> Option<String> {
        let codec = self.seal.as_ref()?;
        let nonce = self
            .nonces
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_string();
        let context = self.sealed_context(argv);
        let options = rmcp::model::SealOptions::new()
            .associated_data(&context)
            .ttl(STATE_TTL);
        codec.seal_json_with(&Sealed { nonce }, &options).ok()
    }

    /// Opens a sealed state for this very argv, once. Any failure is one answer.
    fn open_state(&self, state: &str, argv: &[String]) -> bool {
        let Some(codec) = self.seal.as_ref() else {
            return false;
        };
        let Ok(sealed) = codec.open_json_with::<Sealed>(state, &self.sealed_context(argv)) else {
            return false;
        };
        let Ok(mut used) = self.used.lock() else {
            return false;
        };
        used.retain(|_, expires| *expires > std::time::Instant::now());
        used.insert(sealed.nonce, std::time::Instant::now() + STATE_TTL)
            .is_none()
    }
}
