'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')

/**
 * Builds the worker from a module that exports a Worker subclass, a plain
 * object with doWork(), or a function `(options) => worker`.
 */
function instantiateWorker (modulePath, options) {
  let exported = require(modulePath)
  if (exported && exported.default) exported = exported.default
  if (typeof exported === 'function' && exported.prototype && typeof exported.prototype.doWork === 'function') {
    const WorkerClass = exported
    return new WorkerClass(options)
  }
  if (typeof exported === 'function') return adopt(exported(options), modulePath)
  return adopt(exported, modulePath)
}

// The hooks the runtime calls, as Worker's base class defines them (no-ops);
// a worker that is a plain object gets those it lacks.
const DEFAULT_HOOKS = Object.freeze({
  async init () {},
  async prepareRedelivered () {},
  async flush () {},
  async close () {},
  stats () { return {} },
  onLeader () {}
})

function adopt (candidate, modulePath) {
  if (!candidate || typeof candidate.doWork !== 'function') {
    throw new InvalidOptionError('worker', modulePath, 'must export a Worker subclass, an object with doWork(), or a factory returning one')
  }
  for (const [hook, fallback] of Object.entries(DEFAULT_HOOKS)) {
    if (typeof candidate[hook] !== 'function') candidate[hook] = fallback
  }
  return candidate
}

module.exports = { instantiateWorker }
