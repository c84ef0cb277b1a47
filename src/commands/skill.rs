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

/// One pack's skill as the MCP skills extension serves it (see docs/mcp.md): the
/// author's `SKILL.md` exactly as written, and the reference `skill` generates.
pub(crate) struct SkillFiles {
    pub(crate) id: String,
    pub(crate) skill: String,
    pub(crate) reference: String,
}

/// The skills of every pack that runs here (built in or installed, as `search`
/// marks them), by id: a catalog pack's once it is installed, a broken pack's
/// never.
pub(crate) fn served(ctx: &Context) -> Vec<SkillFiles> {
    super::load_catalog(ctx)
        .packs
        .iter()
        .map(|pack| SkillFiles {
            id: pack.manifest.id.clone(),
            skill: pack.skill.text.clone(),
            reference: render::skill_reference(pack),
        })
        .collect()
}
