// ce_receiver.js PORT_FILE OUT_DIR: the webhook CloudEvents test's receiver.
// Listens on a free 127.0.0.1 port (written to PORT_FILE), answers every
// POST 200 and appends it to OUT_DIR/<first path segment>.json as one JSON
// line {headers, body}. With WH_SECRET set (whsec_<base64>), a request is
// accepted only with a valid Standard Webhooks signature over
// "<webhook-id>.<webhook-timestamp>.<body>" and a timestamp within 5
// minutes; otherwise it is answered 401 (and the relay dead-letters it).
"use strict";
const http = require("http");
const fs = require("fs");
const crypto = require("crypto");

const [portFile, outDir] = process.argv.slice(2);
const secret = process.env.WH_SECRET;
const key = secret ? Buffer.from(secret.replace(/^whsec_/, ""), "base64") : null;

function signatureOk(headers, body) {
  const id = headers["webhook-id"], ts = headers["webhook-timestamp"];
  if (!id || !ts || !headers["webhook-signature"]) return false;
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false; // the replay window
  const want = crypto.createHmac("sha256", key).update(`${id}.${ts}.`).update(body).digest();
  return headers["webhook-signature"].split(" ").some((s) => {
    const [v, sig] = s.split(",");
    const got = Buffer.from(sig || "", "base64");
    return v === "v1" && got.length === want.length && crypto.timingSafeEqual(got, want);
  });
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    if (key && !signatureOk(req.headers, body)) {
      res.writeHead(401).end("bad signature");
      return;
    }
    const name = req.url.split("/")[1].replace(/[^a-z0-9_]/gi, "_");
    fs.appendFileSync(`${outDir}/${name}.json`,
      JSON.stringify({ headers: req.headers, body: body.toString("utf8") }) + "\n");
    res.writeHead(200).end();
  });
});
server.listen(0, "127.0.0.1", () => fs.writeFileSync(portFile, `${server.address().port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
