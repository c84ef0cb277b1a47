//! `hcpx skill PACK`

use serde_json::json;

use super::{find_pack, load_one};
use crate::Reply;
use crate::context::Context;
use crate::error::Failure;
use crate::render;

pub(crate) fn run(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    let catalog = load_one(ctx, id);
    let pack = find_pack(&catalog, id)?;
    let reference = render::skill_reference(pack);
    Ok(Reply {
        data: Some(json!({
            "id": pack.manifest.id,
            "version": pack.manifest.version.to_string(),
            "source": pack.source_label(),
            "description": pack.skill.description,
            "skill": pack.skill.text,
            "reference": reference,
        })),
        text: render::skill_text(pack, &reference),
        ..Reply::default()
    })
}
