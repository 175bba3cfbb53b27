'use strict'

const MongoCollector = require('./mongo-collector')
const MongoCollectorConfig = require('./mongo-collector-config')
const { entryDataStart, entryEnd, datagramAt, entryAddressStart, entryAddressLength } = require('../shared/batch-codec')

/** The master of a definition: a MongoCollector with its settings, and its key() when it declares one. */
function definedCollector (definition, settings) {
  const Collector = class extends MongoCollector {
    static settings = settings

    constructor (options, workerKeys) {
      super(options, workerKeys)
      // Its workers share maxNewKeysPerMinute evenly.
      if (definition.cardinality) this.options.workerOptions.newKeyShares = this.options.instances
    }
  }
  if (definition.key || definition.affinity) {
    // The definition's key of a message's bytes (a string is hashed, an
    // integer mixed; null or undefined: the sender's), read from the batch
    // entry on the native receive path, with no message built.
    Collector.prototype.key = function key (message) {
      const k = this._keyOf(message.data, 0, message.data.length)
      return k === null || k === undefined ? MongoCollector.prototype.key.call(this, message) : k
    }
    Collector.prototype.entryKey = function entryKey (buf, offset) {
      const k = this._keyOf(buf, entryDataStart(buf, offset), entryEnd(buf, offset))
      return k === null || k === undefined ? MongoCollector.prototype.key.call(this, datagramAt(buf, offset)) : k
    }
  }
  // Its split of a message into parts, each distributed on its own (LoadBalancer#parts).
  if (definition.parts) Collector.prototype.parts = function parts (buf, start, end) { return definition.parts(buf, start, end) }
  if (definition.keep && !definition.key && !definition.affinity) {
    // Kept state is scoped by sender address (unless keep.scope says
    // otherwise, with a key to match): one sender's messages meet their state
    // in one worker, whatever port it sends from.
    Collector.prototype.key = function key (message) {
      const remote = message.rinfo || message.remote
      return remote ? remote.address : ''
    }
    Collector.prototype.entryKey = function entryKey (buf, offset) {
      const start = entryAddressStart(offset)
      return buf.latin1Slice(start, start + entryAddressLength(buf, offset))
    }
  }
  // The key of bytes data[start, end): an affinity reads them in place; a key(data) is given a view.
  Collector.prototype._keyOf = guardedKey(definition.affinity
    ? affinityKey(definition, settings)
    : (data, start, end) => definition.key(start === 0 && end === data.length ? data : data.subarray(start, end)))
  Object.defineProperty(Collector, 'name', { value: className(definition.name, 'Collector') })
  return Collector
}

// A key that throws on a message (JSON.parse of a sender's bytes) gives
// null: the message goes by its sender's address, counted in
// events.keyErrors and the first said. It crashed the master on the native
// receive path, where a sender chooses the bytes.
// So does a key that is not a key: anything but a string, an integer or null
// (an object hashed as "[object Object]" sent every message to one worker).
function guardedKey (keyOf) {
  return function guarded (data, start, end) {
    let key
    try {
      key = keyOf.call(this, data, start, end)
    } catch (err) {
      if (this.counters.event('keyErrors') === 1) this.logger.error({ err }, `key() failed on a message: ${err && err.message}; such messages go by their sender's address (counted in events.keyErrors)`)
      return null
    }
    if (typeof key === 'string' || Number.isInteger(key) || key === null || key === undefined) return key
    if (this.counters.event('keyErrors') === 1) this.logger.error(`key() gave ${key === null ? 'null' : Array.isArray(key) ? 'an array' : typeof key === 'number' ? `${key}, not an integer` : `a${typeof key === 'object' ? 'n object' : ` ${typeof key}`}`}, not a key (a string or an integer); such messages go by their sender's address (counted in events.keyErrors)`)
    return null
  }
}

// key(data) of an `affinity`: made once per master, on the first message,
// from the workers' settings (defaults applied), its evictions counted in
// events.stateEvicted.
function affinityKey (definition, settings) {
  return function keyOf (data, start, end) {
    if (!this._affinity) {
      const given = this.options.workerOptions
      const values = Object.fromEntries(Object.entries(settings.worker).map(([name, decl]) => [name, given[name] === undefined ? decl.default : given[name]]))
      this._affinity = definition.affinity(values, (map) => this.ctx.count('stateEvicted', map))
    }
    return this._affinity.key(data, start, end)
  }
}

/** Its flags: the base ones with the definition's defaults, plus its settings. */
function definedConfig (definition, settings) {
  const Config = class extends MongoCollectorConfig {
    static usage = definition.usage || `collector run ${definition.name} [options]`
    static flags = MongoCollectorConfig.extendFlags(MongoCollectorConfig.settingsFlags(settings))
  }
  Object.defineProperty(Config, 'name', { value: className(definition.name, 'Config') })
  return Config
}

function className (name, kind) {
  return name.replace(/(^|[^A-Za-z0-9])([A-Za-z0-9])/g, (_, __, c) => c.toUpperCase()) + kind
}

module.exports = { definedCollector, definedConfig }
