'use strict'

const path = require('node:path')
const { fileURLToPath } = require('node:url')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const { declareSettings } = require('../shared/settings')
const { KINDS } = require('./sinks')
const { closestName } = require('../shared/closest-name')

// Listener options a definition may set (LoadBalancer options, with a flag).
const LISTEN_KEYS = Object.freeze(['protocol', 'host', 'port', 'framing', 'split', 'distribution', 'affinity', 'maxFrameBytes', 'fixed'])
// Its optional functions.
const HOOKS = Object.freeze(['key', 'affinity', 'parts', 'state', 'warm', 'enrich', 'stats', 'memory', 'cardinality'])
// Records one message may give when its definition says nothing: more than
// any one datagram of the protocols here carries (RTCP: 31 report blocks a
// packet; NetFlow v5: 30 flows), few enough that one hostile message cannot
// hold a worker's flush for long.
const MAX_RECORDS = 1000

/**
 * A collector from one object, instead of three subclass chains: what
 * `collector run <name|path>` loads and what code starts
 * (`new module.Collector(options).start()`). The definition:
 *
 * - `name`, `description`, `usage` (the help's first line; default
 *   `collector run <name> [options]`);
 * - `listen`: its LoadBalancer defaults (`protocol`, `port`, `framing`,
 *   `split`: 'lines' makes each line of a datagram a message of its own),
 *   and `fixed`, those of them its format needs (`['split']`): another
 *   value given is refused at start;
 * - `settings`: the worker settings it adds (declared as
 *   workers/mongo-settings.js declares them: each gets a flag);
 * - `key(data)`: the affinity key of a message's (or line's) bytes,
 *   computed in the master, from the batch entry on the native receive
 *   path: one key always lands on one worker (distribution hash);
 * - `affinity(settings, evicted)`: instead of `key`, when the key needs
 *   memory: called once per master with the workers' settings (defaults
 *   applied) and `evicted(map)`, which counts one entry forgotten
 *   (`events.stateEvicted`); gives `{ key(data) }`, used as `key` is;
 * - `parts(buf, start, end)`: optional, computed in the master before the
 *   key: null keeps the message (its bytes `buf[start, end)`, read in
 *   place) whole, else the bytes of its parts, each a message of its own
 *   (its own key, counted as one) with the whole's sender and arrival
 *   (HEP: a TCP segment holding several calls' SIP messages);
 * - `decode(message, settings, arrival)`: pure; a record, an array of
 *   them, or null for nothing to store; returns or throws a DecodeError to
 *   refuse the message (returning one made once costs no unwinding).
 *   `arrival`: `{ receivedAt, remote, kept }`, the time of the message's batch
 *   (the same when it is delivered again), the sender, and with `keep`
 *   the message's kept state;
 * - `keep`: optional `{ scope?(message), collection?, maxEntries?, maxPerScope?, seenEvery? }`: state
 *   decode reads and changes through `arrival.kept` (`get(name)`,
 *   `set(name, value)`, `delete(name)`; values plain JSON), per scope (by
 *   default the sender's address), kept by the framework where a worker's
 *   heir finds it: written with the sinks, acknowledged with them
 *   (workers/kept-state.js; collection `<name>_kept` by default), each
 *   scope's `seenAt` moved forward at most every `seenEvery` ms while in use
 *   (default 5 minutes) and expired by retention once quiet;
 * - `state(settings)`: optional, each worker's initial `state` (default `{}`);
 * - `enrich(records, state, message)`: optional, stateful (each worker's
 *   own `state` object, gone with the worker: what must outlive it goes in
 *   `keep`), returns the records to store, or a DecodeError to refuse the
 *   message;
 * - `stats(state)`, `memory(state)`: optional, fields the worker's stats
 *   add, and what its state holds (`{ held, evicted }`, per map);
 * - `tally`: optional `{ name: (record) => names }`, counted per worker
 *   over the decoded records (before `enrich`);
 * - `maxRecords`: the most records one message may give, from `decode`
 *   and again from `enrich` (default 1000); a message giving more is
 *   refused whole (`tooManyRecords`);
 * - `cardinality(record)`: optional, the key a decoded record adds to what
 *   the collector stores (StatsD: name and type), or null; with it the
 *   workers cap the new keys per minute (`maxNewKeysPerMinute`,
 *   workers/new-key-limit.js), known keys always passing;
 * - `sinks`: where records go (lib/collector/sinks.js).
 *
 * It gives a collector module, `{ description, Collector, Config, Worker,
 * definition, settings }` (the contract app/collector-registry.js checks).
 * Its workers load the file that called defineCollector (or
 * `definition.file`) and run its `Worker`: mongoose and the sinks' stores
 * are loaded there, never in the master; the master's classes (Collector,
 * Config) are built only in the master.
 *
 * @param {object} definition
 * @returns {{ description: string, Collector: Function, Config: Function, Worker: Function, definition: object }}
 */
function defineCollector (definition) {
  checkDefinition(definition)
  const file = definition.file ? fileOf(definition.file) : callerFile()
  const settings = collectorSettings(definition, file)
  checkSinkSettings(definition, settings.worker)
  const module = {
    description: definition.description || '',
    definition: Object.freeze({ maxRecords: MAX_RECORDS, ...definition, file }),
    settings // what Collector.settings is, without building the master's classes
  }
  // Each class is built when first asked for, in the process that runs it:
  // a worker loads the definition's file and takes Worker, never the
  // master's classes (the balancer, the config parser); the master never
  // the worker's (mongoose, the sinks' stores).
  const classes = {
    Collector: () => masterClasses(module.definition, settings).Collector,
    Config: () => masterClasses(module.definition, settings).Config,
    Worker: () => definedWorker(module.definition, settings)
  }
  for (const [name, get] of Object.entries(classes)) Object.defineProperty(module, name, { enumerable: true, get })
  return module
}

// The settings declaration MongoCollector, its config and the worker take.
function collectorSettings (definition, file) {
  const { MONGO_SETTINGS, NEW_KEY_SETTINGS } = require('../../workers/mongo-settings')
  const { DATABASE_SETTINGS } = require('./database-settings')
  const { fixed = [], ...listen } = definition.listen || {}
  const defaults = { name: definition.name, ...listen, worker: file }
  if ((definition.key || definition.affinity || definition.keep) && !listen.distribution) defaults.distribution = 'hash'
  // Kept state is one worker's per key: a key's messages wait for its worker rather than meet another.
  if (definition.keep) defaults.affinity = 'strict'
  return Object.freeze({
    defaults: Object.freeze(defaults),
    fixed: Object.freeze([...fixed]),
    master: DATABASE_SETTINGS,
    worker: declareSettings({ ...MONGO_SETTINGS, ...(definition.cardinality ? NEW_KEY_SETTINGS : {}), ...definition.settings })
  })
}

const masters = new WeakMap()

// The master's Collector and Config of a definition, built once, after
// the checks that need the master's options (never loaded in a worker).
function masterClasses (definition, settings) {
  if (!masters.has(definition)) {
    checkForMaster(definition)
    const { definedCollector, definedConfig } = require('./defined-classes')
    masters.set(definition, { Collector: definedCollector(definition, settings), Config: definedConfig(definition, settings) })
  }
  return masters.get(definition)
}

const workers = new WeakMap()

// What makes a definition's worker, built when a worker first asks: a
// DefinitionWorker given the definition (two levels above Worker, no class
// of its own per definition). It is DefinitionWorker's constructor bound to
// the definition: `new`, a call, and a subclass of it (a worker that adds
// to a built-in one's stats) all get a DefinitionWorker, the subclass's
// prototype first; it carries the definition and its workers' settings, as
// the master's classes do.
function definedWorker (definition, settings) {
  if (!workers.has(definition)) {
    const DefinitionWorker = require('../../workers/definition-worker')
    const Worker = function DefinedWorker (options = {}) {
      return Reflect.construct(DefinitionWorker, [options, definition, settings.worker], new.target || Worker)
    }
    Worker.prototype = DefinitionWorker.prototype
    Worker.definition = definition
    Worker.settings = settings.worker
    workers.set(definition, Object.freeze(Worker))
  }
  return workers.get(definition)
}

// What a definition may say (docs/writing-collectors.md): a key not among
// them is a typo (`kep`, `maxRecord`) refused at load, not ignored.
const DEFINITION_KEYS = Object.freeze(['name', 'description', 'usage', 'listen', 'settings', 'key', 'affinity', 'parts', 'decode', 'keep', 'state', 'warm', 'enrich',
  'stats', 'memory', 'tally', 'maxRecords', 'cardinality', 'sinks', 'file'])

function checkDefinition (d) {
  const refuse = (what) => { throw InvalidOptionError.problem('definition', `${d && typeof d.name === 'string' ? `collector ${d.name} ` : ''}${what}`) }
  if (!d || typeof d !== 'object') refuse('a collector definition is an object')
  if (typeof d.name !== 'string' || !/^[A-Za-z0-9][\w.-]*$/.test(d.name)) refuse('needs a name: letters, digits, ".", "_" and "-"')
  for (const key of Object.keys(d)) { // before what is missing: `decoder` is a typo of decode, said so
    if (DEFINITION_KEYS.includes(key)) continue
    const closest = closestName(key, DEFINITION_KEYS)
    refuse(`takes no ${key}${closest ? `; did you mean ${closest}?` : ''}`)
  }
  if (typeof d.decode !== 'function') refuse('needs decode(message, settings), giving the records of a message')
  for (const hook of HOOKS) if (d[hook] !== undefined && typeof d[hook] !== 'function') refuse(`${hook} must be a function`)
  if (d.key && d.affinity) refuse('takes key or affinity, not both (affinity gives the key)')
  if (!Array.isArray(d.sinks) || d.sinks.length === 0) refuse('needs at least one sink (sinks.updates, sinks.counters, sinks.documents)')
  for (const sink of d.sinks) if (!sink || !KINDS.includes(sink.kind)) refuse(`a sink is one of sinks.${KINDS.join(', sinks.')} (got ${JSON.stringify(sink && sink.kind)})`)
  const collections = d.sinks.map((sink) => sink.collection)
  if (new Set(collections).size !== collections.length) refuse(`two sinks write to one collection (${collections.join(', ')})`)
  for (const key of Object.keys(d.listen || {})) if (!LISTEN_KEYS.includes(key)) refuse(`listen takes ${LISTEN_KEYS.join(', ')}, not ${key}`)
  const fixed = (d.listen && d.listen.fixed) || []
  if (!Array.isArray(fixed) || fixed.some((key) => key === 'fixed' || !LISTEN_KEYS.includes(key) || typeof d.listen[key] !== 'string')) refuse(`listen.fixed lists listen keys given a value here (a name, not a function), got ${JSON.stringify(fixed)}`)
  for (const [name, count] of Object.entries(d.tally || {})) if (typeof count !== 'function') refuse(`tally.${name} must be a function of a record`)
  if (d.maxRecords !== undefined && !(Number.isInteger(d.maxRecords) && d.maxRecords >= 1)) refuse(`maxRecords must be a positive integer (got ${JSON.stringify(d.maxRecords)})`)
  if (d.keep !== undefined) checkKeep(d.keep, collections, refuse)
}

// What a definition says of the master's options: its listen values, as
// their flags would take them; no setting named as one of them (--port,
// --instances), which would replace that option, flag and all. The
// workers' settings (MONGO_SETTINGS) may be declared again, with other defaults.
function checkForMaster (d) {
  const refuse = (what) => { throw InvalidOptionError.problem('definition', `collector ${d.name} ${what}`) }
  for (const [key, value] of Object.entries(d.listen || {})) {
    if (key === 'fixed') continue
    const problem = listenProblem(key, value)
    if (problem) refuse(`listen.${key} ${problem} (got ${JSON.stringify(value)})`)
  }
  const { MONGO_SETTINGS, NEW_KEY_SETTINGS } = require('../../workers/mongo-settings')
  const masterFlags = require('./mongo-collector-config').flags
  for (const name of Object.keys(d.settings || {})) {
    if (name in masterFlags && !(name in MONGO_SETTINGS) && !(name in NEW_KEY_SETTINGS)) {
      refuse(`settings.${name} is one of the framework's options (--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}): give the setting another name${LISTEN_KEYS.includes(name) ? ` (a default for it goes in listen.${name})` : ''}`)
    }
  }
}

// What a listen value must be: the LoadBalancer option's type, range and
// choices (lib/master/options.js); framing and distribution may be functions.
function listenProblem (key, value) {
  const { OPTIONS } = require('../master/options')
  const option = OPTIONS[key]
  if (value === undefined || (typeof value === 'function' && (key === 'framing' || key === 'distribution'))) return null
  if (option.type === 'integer' || option.type === 'port' || option.type === 'size') {
    const [min, max] = option.range
    return Number.isInteger(value) && value >= min && value <= max ? null : `must be an integer from ${min} to ${max}`
  }
  if (typeof value !== 'string') return 'must be a string'
  const choices = option.choices ? option.choices() : null
  return choices && !choices.includes(value) ? `is one of ${choices.join(', ')}` : null
}

const KEEP_KEYS = Object.freeze(['scope', 'collection', 'maxEntries', 'maxPerScope', 'seenEvery', 'scopeBefore'])

function checkKeep (keep, collections, refuse) {
  if (!keep || typeof keep !== 'object') refuse('keep is an object: { scope?(message), collection?, maxEntries?, maxPerScope?, seenEvery?, scopeBefore?(scope) }')
  for (const key of Object.keys(keep)) {
    if (KEEP_KEYS.includes(key)) continue
    const closest = closestName(key, KEEP_KEYS)
    refuse(`keep takes no ${key}${closest ? `; did you mean ${closest}?` : ''} (it takes ${KEEP_KEYS.join(', ')})`)
  }
  if (keep.scope !== undefined && typeof keep.scope !== 'function') refuse('keep.scope must be a function of a message, giving the scope of its kept state')
  if (keep.scopeBefore !== undefined && typeof keep.scopeBefore !== 'function') refuse('keep.scopeBefore must be a function of a scope, giving the scope an earlier version kept its state under')
  if (keep.collection !== undefined && (typeof keep.collection !== 'string' || keep.collection === '')) refuse('keep.collection must be a collection name')
  if (keep.collection !== undefined && collections.includes(keep.collection)) refuse(`keep.collection ${keep.collection} is a sink's collection too`)
  for (const bound of ['maxEntries', 'maxPerScope', 'seenEvery']) {
    if (keep[bound] !== undefined && !(Number.isInteger(keep[bound]) && keep[bound] >= 1)) refuse(`keep.${bound} must be a positive integer (got ${JSON.stringify(keep[bound])})`)
  }
}

// A sink's fromSettings names settings the worker has.
function checkSinkSettings (d, worker) {
  for (const sink of d.sinks) {
    for (const setting of Object.values(sink.fromSettings || {})) {
      if (!worker[setting]) throw new InvalidOptionError('definition', d.name, `sink ${sink.collection}: fromSettings names ${setting}, not a setting of its workers`)
    }
  }
}

// The file whose code called defineCollector: its workers load it.
function callerFile () {
  const original = Error.prepareStackTrace
  let frames
  try {
    Error.prepareStackTrace = (_, stack) => stack
    frames = new Error().stack
  } finally {
    Error.prepareStackTrace = original
  }
  const here = __filename
  for (const frame of frames) {
    const name = frame.getFileName()
    if (name && fileOf(name) !== here) return fileOf(name)
  }
  throw new InvalidOptionError('definition', 'file', 'cannot tell which file defines the collector: give definition.file (__filename)')
}

function fileOf (name) {
  return name.startsWith('file:') ? fileURLToPath(name) : path.resolve(name)
}

module.exports = { defineCollector }
