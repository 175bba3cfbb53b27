'use strict'

// A collector definition run in this process, in order, as one worker that
// never dies would run it: decode with kept state in a plain Map (get, set,
// delete, keys), enrich with one state, each record handed to every sink's
// `of`. What it gives is what `collector verify` expects the cluster to
// have stored, independently of the cluster: no master, no batches, no
// database, no redelivery. It mirrors the contract of
// docs/writing-collectors.md ("Records, state and refusals"), not the
// worker's code (workers/definition-worker.js).

const DecodeError = require('../../exceptions/decode-error')

const DEFAULTS = Object.freeze({ maxRecords: 1000, maxPerScope: 4096 })

/**
 * @param {object} definition the collector's definition (module.definition)
 * @param {object} settings its workers' settings, defaults applied
 * @param {Array<{ data: Buffer, rinfo?: object, remote?: object, receivedAt: Date }>} messages in arrival order
 * @param {(outputs: any[]) => any[]} [capture] takes a record's outputs (one per sink) once every sink's `of` ran
 *   for it (a later `of` may change the object an earlier one gave, as in the worker, where the sinks write later)
 * @returns {{ outcomes: Array<{ refused?: string, failed?: string, many?: boolean, records?: Array<{ place: number, outputs: any[] }> }>, kept: Map<string, Map<string, any>>|null }}
 *   per message: refused by reason, failed (a decoder threw), or its records, each with what every sink's `of` gave for it (by sink)
 */
function runDefinition (definition, settings, messages, capture = (outputs) => outputs) {
  const kept = definition.keep ? new Map() : null
  const state = definition.enrich && definition.state ? definition.state(settings) : {}
  const outcomes = messages.map((message, n) => outcomeOf(definition, settings, message, { kept, state, capture, n }))
  return { outcomes, kept }
}

// A message's 12-byte key (arrival.key(), the contract's): its place in the
// run here, distinct per message as the cluster's keys are (not equal to them).
function keyOf (n) {
  const key = Buffer.alloc(12)
  key.writeUInt32BE(n, 8)
  return key
}

function outcomeOf (definition, settings, message, { kept, state, capture, n }) {
  const arrival = { receivedAt: message.receivedAt, remote: message.rinfo || message.remote || null, kept: null, key: () => keyOf(n) }
  if (kept) arrival.kept = keptView(kept, scopeOf(definition.keep, message), definition.keep.maxPerScope || DEFAULTS.maxPerScope)
  const maxRecords = definition.maxRecords || DEFAULTS.maxRecords
  let out = attempt(() => definition.decode(message, settings, arrival), maxRecords)
  if (out.records === undefined) return out
  let many = Array.isArray(out.records)
  if (definition.enrich) {
    const decoded = out.records
    out = attempt(() => definition.enrich(decoded, state, arrival), maxRecords)
    if (out.records === undefined) return out
    many = many || Array.isArray(out.records)
  }
  const list = Array.isArray(out.records) ? out.records : [out.records]
  const records = list.map((record, place) => ({ place, outputs: capture(definition.sinks.map((sink) => sink.of ? sink.of(record, arrival) : record)) }))
  return { many, records }
}

// decode's or enrich's answer: `{ records }`, or `{ refused }` (a DecodeError
// returned or thrown, more than maxRecords records), `{ failed }` (it threw
// something else: the worker's doWork fails), or `{}` (null: nothing to store).
function attempt (fn, maxRecords) {
  let out
  try {
    out = fn()
  } catch (err) {
    if (err && typeof err.reason === 'string') return { refused: err.reason }
    return { failed: err && err.message ? err.message : String(err) }
  }
  if (out instanceof DecodeError || (out instanceof Error && typeof out.reason === 'string')) return { refused: out.reason }
  if (out === null || out === undefined) return {}
  if (Array.isArray(out) && out.length > maxRecords) return { refused: 'tooManyRecords' }
  return { records: out }
}

// The scope of a message's kept state: keep.scope(message), else its sender's address.
function scopeOf (keep, message) {
  if (keep.scope) return String(keep.scope(message))
  const remote = message.rinfo || message.remote
  return remote ? remote.address : ''
}

// arrival.kept: the scope's entries, changed in place (null or undefined deletes).
function keptView (kept, scope, maxPerScope) {
  if (!kept.has(scope)) kept.set(scope, new Map())
  const values = kept.get(scope)
  const change = (name, value) => {
    if (typeof name !== 'string' || name.includes('\u0000')) throw new TypeError(`kept: a name is a string without NUL (got ${JSON.stringify(name)})`)
    if (value === null || value === undefined) return values.delete(name)
    if (!values.has(name) && values.size >= maxPerScope) throw new DecodeError('keptFull', 'a scope of kept state holds keep.maxPerScope names already')
    values.set(name, value)
  }
  return {
    get: (name) => values.get(name),
    set: change,
    delete: (name) => change(name, null),
    keys: (prefix = '') => [...values.keys()].filter((name) => name.startsWith(prefix))
  }
}

module.exports = { runDefinition }
