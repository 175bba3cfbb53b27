'use strict'

const os = require('node:os')
const path = require('node:path')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const protocols = require('../protocols')
const { strategies } = require('./distribution')
const { validateFraming } = require('../protocols/framing')
const { createNoopLogger, isLogger } = require('../shared/logger')
const NativeUdpSocket = require('../protocols/native-udp-socket')

const UDP_RECEIVERS = ['auto', 'native', 'dgram']

/** Defaults of every LoadBalancer option (see README "Options"). */
const DEFAULTS = Object.freeze({
  name: 'collector',
  protocol: 'udp',
  host: '127.0.0.1',
  port: 0,
  instances: 'auto',
  worker: undefined,
  workerOptions: {},
  retry: true,
  retryDelay: 5000,
  distribution: 'round-robin',
  framing: 'newline',
  maxFrameBytes: 65536,
  maxConnections: 1024,
  maxConnectionsPerSource: 32,
  idleTimeout: 300000,
  batchSize: 256,
  batchDelay: 2,
  maxInFlight: 100000,
  recvBufferSize: 8 * 1024 * 1024,
  udpReceiver: 'auto',
  respawnDelay: 100,
  maxCrashes: 10,
  crashWindow: 60000,
  drainTimeout: 30000
})

/** The range of every integer option (durations in ms); the config's flags take theirs from here. */
const INTEGER_RANGES = Object.freeze({
  port: [0, 65535],
  instances: [1, 1024],
  retryDelay: [1, 3600000],
  maxFrameBytes: [1, 0x7fffffff],
  maxConnections: [1, 1e6],
  maxConnectionsPerSource: [1, 1e6],
  idleTimeout: [0, 86400000],
  batchSize: [1, 4096],
  batchDelay: [0, 1000],
  maxInFlight: [1, 1e9],
  recvBufferSize: [0, 0x7fffffff],
  respawnDelay: [0, 3600000],
  maxCrashes: [0, 1e6],
  crashWindow: [1, 86400000],
  drainTimeout: [1, 86400000]
})

/**
 * Merges options (or a parsed config object) over the defaults and checks
 * them once; throws InvalidOptionError naming the bad option and value.
 */
function normalizeOptions (input = {}) {
  const options = { ...DEFAULTS }
  for (const [key, value] of Object.entries(input)) if (value !== undefined) options[key] = value
  if (options.worker === undefined && input.workername !== undefined) options.worker = input.workername
  if (options.instances === 'auto') options.instances = os.availableParallelism()
  for (const [key, [min, max]] of Object.entries(INTEGER_RANGES)) checkInteger(key, options[key], min, max)
  checkChoices(options)
  options.worker = resolveWorkerModule(options.worker)
  options.retry = Boolean(options.retry)
  options.logger = options.logger || createNoopLogger()
  if (!isLogger(options.logger)) throw new InvalidOptionError('logger', '[object]', 'must have trace/debug/info/warn/error/fatal methods (pino-compatible)')
  return options
}

/** Absolute path of a worker module, checked in the master before forking. */
function resolveWorkerModule (worker, base = process.cwd()) {
  if (typeof worker !== 'string' || worker.length === 0) {
    throw new InvalidOptionError('worker', worker, 'must be the path of a worker module')
  }
  const candidate = path.isAbsolute(worker) || worker.startsWith('.') ? path.resolve(base, worker) : worker
  try {
    return require.resolve(candidate)
  } catch {
    throw new InvalidOptionError('worker', worker, `must be a module that can be loaded (looked for ${candidate})`)
  }
}

function checkInteger (key, value, min, max) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidOptionError(key, value, `must be an integer from ${min} to ${max}`)
  }
}

function checkChoices (options) {
  protocols.get(options.protocol)
  if (typeof options.distribution !== 'function' && !strategies[options.distribution]) {
    throw new InvalidOptionError('distribution', options.distribution, `must be one of ${Object.keys(strategies).join(', ')} or a function`)
  }
  validateFraming(options.framing)
  if (!UDP_RECEIVERS.includes(options.udpReceiver)) throw new InvalidOptionError('udpReceiver', options.udpReceiver, `must be one of ${UDP_RECEIVERS.join(', ')}`)
  if (options.udpReceiver === 'native' && options.protocol === 'udp' && !NativeUdpSocket.available) {
    throw new InvalidOptionError('udpReceiver', options.udpReceiver, `needs the native receiver, which is not built (${NativeUdpSocket.unavailableReason()}); run \`node native/build.js\` or use 'auto'`)
  }
  if (typeof options.name !== 'string' || options.name.length === 0) throw new InvalidOptionError('name', options.name, 'must be a non-empty string')
  if (typeof options.host !== 'string' || options.host.length === 0) throw new InvalidOptionError('host', options.host, 'must be a host name or address')
}

module.exports = { DEFAULTS, INTEGER_RANGES, UDP_RECEIVERS, normalizeOptions }
