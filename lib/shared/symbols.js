'use strict'

/**
 * The symbols that hold the framework's internal state on objects a user
 * also holds, declared once. Registered (`Symbol.for`) so that a worker
 * extending its own installed copy of this package still meets the
 * runtime of the copy that runs it.
 */
module.exports = Object.freeze({
  /** On a Worker: the WorkerRuntime that drives it (lib/worker/worker-runtime.js). */
  RUNTIME: Symbol.for('collector-cluster.worker-runtime'),
  /** On a parsed config: the option keys it carries (lib/master/options.js). */
  CONFIG_KEYS: Symbol.for('collector-cluster.config-keys')
})
