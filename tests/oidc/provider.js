// A real OpenID provider (the certified `oidc-provider` package) on loopback, for
// the OAuth tests of `hcpx mcp --http` (tests/it/oauth.rs). It mints JWT access
// tokens with the client credentials grant for a resource indicator (RFC 8707), as
// a team's identity provider would for a person.
//
// Usage: node provider.js OIDC_DIR KEYS [--issuer URL] [--clock-offset SECONDS]
//   OIDC_DIR  where oidc-provider is installed (target/oidc/node_modules/oidc-provider)
//   KEYS      a JSON file of private JWKs: read when it exists, else made (one RSA,
//             one P-256 and one Ed25519 key) and written there, so that a second
//             provider can sign with the same keys
//   --issuer  the issuer it names in its tokens and metadata (default: its own
//             address), so that a second provider can pose as the first
//   --clock-offset  seconds added to its clock (negative: its tokens are old)
//   --kids-from FILE  new keys made for KEYS take the key ids of the keys in FILE
//             (another provider's), so that its tokens name that provider's keys
//
// Listens on 127.0.0.1 on a port the kernel picks and prints `PORT ISSUER` on the
// first line of stdout. It lives as long as its stdin is open (the test holds the
// other end), so no node process outlives the tests however they end.
//
// Clients, each with the secret `ID-secret` (client_secret_post), whose tokens name
// the client as `sub`: `alice` (groups admins and dev) and `bob` (group dev). A token
// request takes `resource` (the audience), `scope` (any of hcp.read, hcp.full,
// other) and `alg` (RS256 by default; PS256, ES256, EdDSA, or HS256-PUBLIC: HMAC
// keyed with the RSA public key's PEM text, the key confusion attack).
"use strict";
const crypto = require("crypto");
const fs = require("fs");
const http = require("http");
const path = require("path");
const { pathToFileURL } = require("url");

const [oidcDir, keysFile, ...rest] = process.argv.slice(2);
const option = (name) => {
  const at = rest.indexOf(name);
  return at >= 0 ? rest[at + 1] : undefined;
};
const offset = Number(option("--clock-offset") || 0) * 1000;
if (offset !== 0) {
  const now = Date.now;
  Date.now = () => now() + offset;
}

process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => process.exit(0));
process.on("uncaughtException", (error) => {
  process.stderr.write(`provider failed: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});

function keys() {
  if (fs.existsSync(keysFile)) return JSON.parse(fs.readFileSync(keysFile, "utf8"));
  const jwk = (type, options, kid, alg) => ({
    ...crypto.generateKeyPairSync(type, options).privateKey.export({ format: "jwk" }),
    kid,
    alg,
    use: "sig",
  });
  const made = {
    keys: [
      jwk("rsa", { modulusLength: 2048 }, `rsa-${crypto.randomUUID()}`, undefined),
      jwk("ec", { namedCurve: "P-256" }, `ec-${crypto.randomUUID()}`, "ES256"),
      jwk("ed25519", {}, `ed-${crypto.randomUUID()}`, "EdDSA"),
    ],
  };
  // An RSA key signs RS256 and PS256: it names no alg of its own.
  delete made.keys[0].alg;
  const kidsFrom = option("--kids-from");
  if (kidsFrom) {
    const theirs = JSON.parse(fs.readFileSync(kidsFrom, "utf8")).keys;
    made.keys.forEach((key, index) => {
      key.kid = theirs[index].kid;
    });
  }
  fs.writeFileSync(keysFile, JSON.stringify(made));
  return made;
}

const groups = { alice: ["admins", "dev"], bob: ["dev"] };

async function main() {
  const { default: Provider } = await import(pathToFileURL(path.join(oidcDir, "lib/index.js")).href);
  const jwks = keys();
  const rsa = jwks.keys.find((key) => key.kty === "RSA");
  const { n, e } = rsa;
  const publicPem = crypto.createPublicKey({ key: { kty: "RSA", n, e }, format: "jwk" })
    .export({ type: "spki", format: "pem" });
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  const issuer = option("--issuer") || `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    jwks,
    clients: Object.keys(groups).map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: "client_secret_post",
      scope: "hcp.read hcp.full other",
    })),
    scopes: ["hcp.read", "hcp.full", "other"],
    enabledJWA: {
      idTokenSigningAlgValues: ["RS256", "PS256", "ES256", "EdDSA"],
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        async defaultResource(ctx, client, oneOf) {
          return oneOf;
        },
        async getResourceServerInfo(ctx, resourceIndicator) {
          const wanted = (ctx.oidc.body && ctx.oidc.body.alg) || "RS256";
          // HS256-PUBLIC: HMAC keyed with the RSA public key's PEM, under that key's id.
          const sign =
            wanted === "HS256-PUBLIC" ? { alg: "HS256", key: Buffer.from(publicPem), kid: rsa.kid } : { alg: wanted };
          return {
            scope: "hcp.read hcp.full other",
            audience: resourceIndicator,
            accessTokenTTL: 600,
            accessTokenFormat: "jwt",
            jwt: { sign },
          };
        },
      },
    },
    async extraTokenClaims(ctx, token) {
      const id = token.clientId;
      return groups[id] ? { groups: groups[id] } : undefined;
    },
  });
  provider.on("server_error", (ctx, error) => process.stderr.write(`server_error: ${error.stack}\n`));
  server.on("request", provider.callback());
  process.stdout.write(`${port} ${issuer}\n`);
}

main().catch((error) => {
  process.stderr.write(`provider did not start: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
