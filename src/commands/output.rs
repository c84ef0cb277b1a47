//! `hcpx output ID [--stream stdout|stderr] [--offset N] [--limit N]`: pages through a
//! full capture kept by the MCP server (see docs/mcp.md).

use serde_json::json;

use crate::Reply;
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::outputs::{ceil_boundary, floor_boundary};

pub fn run(ctx: &Context, id: &str, stream: &str, offset: usize, limit: usize) -> Result<Reply, Failure> {
    let stored = ctx.outputs.as_ref().and_then(|store| store.get(id)).ok_or_else(|| {
        Failure::new(
            Reason::UnknownOutput,
            "no kept output by that id: outputs live in the MCP server that produced them (the most recent 64 MiB, each for at most an hour)",
        )
        .next("run the command again")
    })?;
    let text = if stream == "stderr" {
        &stored.stderr
    } else {
        &stored.stdout
    };
    let start = ceil_boundary(text, offset);
    // A page takes at most 2 MiB as JSON, whatever the limit: paging is how big
    // output is read, and a message must stay under 9.5 MiB.
    let end = floor_boundary(text, start.saturating_add(limit));
    let end = crate::mcp::fit::page_end(text, start, end - start.min(end), crate::mcp::fit::MAX_PAGE);
    let page = &text[start..end.max(start)];
    let next = (end < text.len()).then_some(end);
    Ok(Reply {
        text: page.to_owned(),
        data: Some(json!({
            "id": id,
            "stream": stream,
            "offset": start,
            "length": page.len(),
            "total": text.len(),
            "nextOffset": next,
            "text": page,
        })),
        ..Reply::default()
    })
}
