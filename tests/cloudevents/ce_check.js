// ce_check.js BINDING MODE DUMP EXPECTED: parses every message a test
// consumer dumped (JSON lines) with the CloudEvents SDK for JavaScript and
// checks it against the rows enqueued (EXPECTED, JSON lines from psql).
//   BINDING: http | kafka | mqtt | amqp     MODE: binary | structured
// The expected attributes are those of the outputs in ce_lib.sh: binary
// outputs set ce_source = "/orders/${aggregate_type}" and ce_subject =
// "${aggregate_id}"; structured ones keep the default source and set
// ce_type = "com.example.${event_type}". Exits 1 on the first mismatch.
"use strict";
const fs = require("fs");
const assert = require("assert");
const { CloudEvent, HTTP, Kafka, MQTT } = require("cloudevents");

const [binding, mode, dumpFile, expectedFile] = process.argv.slice(2);
const lines = (f) => fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim() !== "");
const CE_JSON = "application/cloudevents+json";

// One dumped message to the SDK's own message shape, then to a CloudEvent.
function toEvent(rec) {
  switch (binding) {
    case "http": // { headers: {name: value}, body }
      return HTTP.toEvent({ headers: rec.headers, body: rec.body });
    case "kafka": { // kcat -J: headers as [k, v, k, v...]
      const headers = {};
      for (let i = 0; i + 1 < rec.headers.length; i += 2) headers[rec.headers[i]] = rec.headers[i + 1];
      return Kafka.toEvent({ headers, key: rec.key, value: rec.payload, body: rec.payload });
    }
    case "mqtt": { // mosquitto_sub -F %j
      const p = rec.properties || {};
      return MQTT.toEvent({
        headers: p["user-properties"] || {},
        body: rec.payload,
        PUBLISH: { "Content Type": p["content-type"] },
      });
    }
    case "amqp": { // rconsume dump: { content_type, headers, body }
      // AMQP binding: structured is the JSON body; binary attributes are the
      // application properties named cloudEvents_<attribute>.
      if ((rec.content_type || "").startsWith(CE_JSON)) return new CloudEvent(JSON.parse(rec.body));
      const attrs = {};
      for (const [k, v] of Object.entries(rec.headers || {}))
        if (k.startsWith("cloudEvents_")) attrs[k.slice("cloudEvents_".length)] = v;
      return new CloudEvent({ ...attrs, datacontenttype: rec.content_type, data: rec.body });
    }
  }
  throw new Error("unknown binding " + binding);
}

// The content type each message came with: binary keeps the payload's.
function contentType(rec) {
  if (binding === "http") return rec.headers["content-type"];
  if (binding === "kafka") {
    const i = rec.headers.indexOf("content-type");
    return i >= 0 && i % 2 === 0 ? rec.headers[i + 1] : undefined;
  }
  if (binding === "mqtt") return (rec.properties || {})["content-type"];
  return rec.content_type;
}

// The time attribute as it was on the wire, before the SDK saw it.
function rawTime(rec) {
  if (mode === "structured")
    return JSON.parse({ http: rec.body, kafka: rec.payload, mqtt: rec.payload, amqp: rec.body }[binding]).time;
  if (binding === "http") return rec.headers["ce-time"];
  if (binding === "kafka") return rec.headers[rec.headers.indexOf("ce_time") + 1];
  if (binding === "mqtt") return rec.properties["user-properties"].time;
  return rec.headers.cloudEvents_time;
}

const want = new Map();
for (const l of lines(expectedFile)) {
  const row = JSON.parse(l);
  if (row.event_type.startsWith(mode === "binary" ? "ce.bin." : "ce.str.")) want.set(row.id, row);
}
const seen = new Set();
for (const l of lines(dumpFile)) {
  const rec = JSON.parse(l);
  const ct = contentType(rec);
  assert.strictEqual(ct.startsWith(CE_JSON), mode === "structured", `content type ${ct} in ${mode} mode`);
  const ev = toEvent(rec);
  ev.validate(); // the SDK's own check of a v1.0 event (throws)
  const row = want.get(ev.id);
  assert.ok(row, `event ${ev.id} was not enqueued for ${mode} mode`);
  assert.strictEqual(ev.specversion, "1.0");
  if (mode === "binary") {
    assert.strictEqual(ev.source, "/orders/" + row.aggregate_type);
    assert.strictEqual(ev.type, row.event_type);
    assert.strictEqual(ev.subject, row.aggregate_id);
  } else {
    assert.strictEqual(ev.source, "/outbox-relay/" + row.aggregate_type);
    assert.strictEqual(ev.type, "com.example." + row.event_type);
    assert.strictEqual(ev.subject, undefined);
  }
  assert.strictEqual(new Date(ev.time).getTime(), Number(row.created_ms), `time ${ev.time}`);
  // the SDK may rewrite time with milliseconds: the text as sent is checked too
  assert.strictEqual(rawTime(rec), row.time, "time as sent (RFC 3339, microseconds)");
  // The MQTT binding carries datacontenttype as the Content Type property,
  // which the SDK's MQTT reader leaves aside in binary mode: read it there.
  const dct = binding === "mqtt" && mode === "binary" ? ct : ev.datacontenttype;
  assert.strictEqual(dct, "application/json");
  assert.strictEqual(ev.aggregateid, row.aggregate_id);
  assert.strictEqual(ev.aggregatetype, row.aggregate_type);
  const data = typeof ev.data === "string" ? JSON.parse(ev.data) : ev.data;
  assert.deepStrictEqual(data, row.payload, `data of ${ev.id}`);
  seen.add(ev.id);
}
const missing = [...want.keys()].filter((id) => !seen.has(id));
assert.strictEqual(missing.length, 0, `${missing.length} ${mode} events never parsed, e.g. ${missing[0]}`);
console.log(`ce_check ${binding} ${mode}: ${seen.size} events parsed and checked`);
