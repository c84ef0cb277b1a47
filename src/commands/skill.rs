//! `hcpx skill PACK`

use serde::Serialize;

use super::{find_pack, load_one};
use crate::Reply;
use crate::context::Context;
use crate::error::Failure;
use crate::render;

pub(crate) fn run(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    let catalog = load_one(ctx, id);
    let pack = find_pack(&catalog, id)?;
    let reference = render::skill_reference(pack);
    let data = Skill {
        id: &pack.manifest.id,
        version: pack.manifest.version.to_string(),
        source: pack.source_label(),
        description: &pack.skill.description,
        skill: &pack.skill.text,
        reference: &reference,
    };
    Ok(Reply::new(&data, render::skill_text(pack, &reference)))
}

/// `skill`'s data: the author's SKILL.md and the generated reference.
#[derive(Serialize)]
struct Skill<'a> {
    id: &'a str,
    version: String,
    source: &'static str,
    description: &'a str,
    skill: &'a str,
    reference: &'a str,
}
