// A straightforward transactional-outbox relay on mqtt.js and node-postgres:
// the baseline tests/bench/mqtt_vs_js.sh measures outbox-relay's MQTT driver
// against. Each worker loops: BEGIN; claim up to BATCH unpublished rows in id
// order with FOR UPDATE SKIP LOCKED; publish them all at QoS 1 (MQTT 5, the
// same user properties as the relay) on its own connection; await every
// PUBACK; mark them published; COMMIT. Any failure rolls the batch back (at
// least once). One worker keeps each aggregate's order (one connection, ids in
// order, the next claim only after the commit); more than one does not.
//
// Environment: MQTT_URL (mqtt://127.0.0.1:1883), BATCH (500), WORKERS (1),
// TOPIC (outbox/${aggregate_type}/${aggregate_id}); the database from the
// usual PGHOST, PGPORT, PGUSER, PGDATABASE. Runs until no row is left
// (--drain), then prints "published N in S s".
'use strict';
const mqtt = require('mqtt');
const { Client } = require('pg');

const url = process.env.MQTT_URL || 'mqtt://127.0.0.1:1883';
const batch = parseInt(process.env.BATCH || '500', 10);
const workers = parseInt(process.env.WORKERS || '1', 10);
const topicTpl = process.env.TOPIC || 'outbox/${aggregate_type}/${aggregate_id}';

const CLAIM = `SELECT id, event_id::text, aggregate_type, aggregate_id, event_type, payload::text AS payload,
         headers, aggregate_seq, event_version,
         to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at
    FROM outbox
   WHERE published_at IS NULL AND dead_at IS NULL AND available_at <= now()
   ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`;
const MARK = 'UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[])';

function topicOf(r) {
  return topicTpl.replace(/\$\{(\w+)\}/g, (_, k) => String(r[k] ?? ''));
}

function propsOf(r) {
  const u = {
    event_id: r.event_id, event_type: r.event_type, aggregate_type: r.aggregate_type,
    aggregate_id: r.aggregate_id, created_at: r.created_at,
  };
  if (r.aggregate_seq !== null) u.aggregate_seq = String(r.aggregate_seq);
  if (r.event_version !== null) u.event_version = r.event_version;
  if (r.headers) for (const [k, v] of Object.entries(r.headers)) u[k] = String(v);
  return { contentType: 'application/json', userProperties: u };
}

async function worker() {
  const db = new Client();
  await db.connect();
  const mq = await mqtt.connectAsync(url, { protocolVersion: 5, clean: true, reconnectPeriod: 1000 });
  let n = 0;
  for (;;) {
    await db.query('BEGIN');
    try {
      const { rows } = await db.query(CLAIM, [batch]);
      if (rows.length === 0) {
        await db.query('COMMIT');
        break;
      }
      await Promise.all(rows.map((r) =>
        mq.publishAsync(topicOf(r), r.payload ?? '', { qos: 1, properties: propsOf(r) })));
      await db.query(MARK, [rows.map((r) => r.id)]);
      await db.query('COMMIT');
      n += rows.length;
    } catch (e) {
      await db.query('ROLLBACK').catch(() => {});
      console.error(`batch failed, rolled back: ${e.message}`);
      await new Promise((res) => setTimeout(res, 1000));
    }
  }
  await mq.endAsync();
  await db.end();
  return n;
}

(async () => {
  const t0 = process.hrtime.bigint();
  const counts = await Promise.all(Array.from({ length: workers }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const n = counts.reduce((a, b) => a + b, 0);
  console.log(`published ${n} in ${s.toFixed(2)} s`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
