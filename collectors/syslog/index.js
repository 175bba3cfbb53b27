'use strict'

const { defineCollector } = require('../../lib/collector/define-collector')
const sinks = require('../../lib/collector/sinks')
const { COUNTER_SETTINGS, COUNTERS_INTERVAL } = require('../../workers/mongo-settings')
const { DEVIATIONS } = require('./syntax')
const { parseSyslog, DEFAULT_LENIENT } = require('./parser')

const MESSAGES = 'syslog' // the messages' collection, by default
const OTHER_HOSTS = 'syslog.(other hosts)' // the counters of hosts past the cap: no host name has a space

/**
 * syslog (RFC 5424, RFC 3164; anything else is stored raw with its reason
 * and counted in `malformed`) over UDP, or TCP with `--protocol tcp_server`
 * (each connection's framing, octet-counting or newline, RFC 6587, detected
 * per message). 5514 by default since 514 needs root.
 *
 * Each message is one document of `syslog` (`--collection`): the parsed
 * fields, `source` (the sender's address) and `_id` the message's key, so a
 * message delivered again collides where it landed. It also counts in the
 * per-minute counter `syslog.<host>.<severity>` (`counters`) at its
 * arrival (the counter's day is what retention ages it by; a sender's clock
 * dated 1970 had its counts deleted at once). The host is the sender's
 * choice: past `--max-new-hosts-per-minute` new ones a worker counts the
 * line under `syslog.(other hosts)` (a host name has no space). Lenient readings (parser DEVIATIONS) are
 * stored parsed, flagged and counted in `deviations`.
 */
module.exports = defineCollector({
  name: 'syslog',
  description: 'syslog (RFC 5424 / RFC 3164) collector over UDP or TCP: messages and per-minute counters in MongoDB',
  listen: { protocol: 'udp', port: 5514, framing: 'auto' },
  settings: {
    collection: { type: 'string', default: MESSAGES, group: 'Storage', description: 'collection the messages are stored in' },
    lenient: { type: 'list', choices: () => DEVIATIONS, default: DEFAULT_LENIENT, group: 'Protocol', description: 'deviations from RFC 5424/3164 read anyway, flagged on the record and counted (the others are stored raw with their name as reason)' },
    strict: { type: 'boolean', default: false, group: 'Protocol', description: 'read no deviation at all (as --lenient with an empty list; it wins over --lenient)' },
    maxBatch: { flag: false, type: 'integer', default: 1000, range: [1, 1e6], group: 'Storage', description: 'messages that trigger an early insert (and the most one insert takes)' },
    countersCollection: COUNTER_SETTINGS.countersCollection,
    preallocateRate: { ...COUNTER_SETTINGS.preallocateRate, default: 0.001 },
    countersInterval: COUNTERS_INTERVAL,
    maxNewHostsPerMinute: { type: 'integer', default: 5000, range: [0, 1e9], group: 'Storage', description: `host names each worker takes a minute for the per-host counters, remembering ten times that: a line of a host past it is stored as always and counted under ${OTHER_HOSTS}, all severities together (the counters sink's overflowed); 0: no cap` }
  },
  decode: (message, { strict, lenient }, { receivedAt }) => parseSyslog(message.data, { strict, lenient, receivedAt }),
  tally: {
    malformed: (record) => record.format === 'raw' ? record.error || 'unparsed' : null,
    deviations: (record) => record.deviations,
    encoding: (record) => record.invalidUtf8 ? 'notUtf8' : null // stored as sent, flagged (invalidUtf8, messageRaw)
  },
  sinks: [
    sinks.documents({
      collection: MESSAGES,
      fromSettings: { collection: 'collection', maxBatch: 'maxBatch' },
      // None unique: the `_id` index (a redelivered message has the same
      // `_id`) is what refuses a message twice, and it stays unique across
      // shards when `_id` is the shard key: { _id: 'hashed' } (workers/storage/schemas.js SHARD_KEYS).
      indexes: [{ key: { receivedAt: 1 } }, { key: { host: 1, timestamp: 1 } }, { key: { severity: 1, timestamp: 1 } }],
      // Retention by arrival: a sender's clock (timestamp) may be anything.
      expireBy: 'receivedAt',
      of: (record, { remote }) => {
        record.source = remote.address
        return record
      }
    }),
    sinks.counters({
      fromSettings: { collection: 'countersCollection', preallocateRate: 'preallocateRate', writeEvery: 'countersInterval', maxNewKeysPerMinute: 'maxNewHostsPerMinute' },
      otherwise: OTHER_HOSTS,
      of: (record, { remote }) => {
        const host = record.host || remote.address
        return { metric: `syslog.${host}.${record.severityName || 'unknown'}`, key: host }
      }
    })
  ]
})
