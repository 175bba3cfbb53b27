'use strict'

const ListenError = require('../../exceptions/listen-error')
const { briefError } = require('../shared/logger')

/**
 * The balancer's /metrics, /healthz and /readyz, when `metricsPort` is set:
 * up before the workers (so /readyz says 503, not nothing, while starting),
 * its web config reloaded on a rolling restart, stopped last. The server
 * (metrics-server.js, and prom-client with it) is loaded only when asked
 * for. `balancer` is what the server reads (stats, readiness, counters).
 */
class MetricsEndpoint {
  constructor (balancer, { options, logger, counters }) {
    this.balancer = balancer
    this.options = options
    this.logger = logger
    this.counters = counters
    this.server = null
  }

  async start () {
    const { metricsPort: port, metricsHost: host, name } = this.options
    if (port === undefined) return
    const MetricsServer = require('./metrics-server')
    this.server = new MetricsServer(this.balancer, { host, port, name, webConfig: this.options.metricsWebConfig, logger: this.logger })
    try {
      await this.server.start()
    } catch (err) {
      this.server = null
      throw ListenError.isBindError(err) ? new ListenError('http', host, port, err) : err
    }
  }

  // A web config that does not check out leaves the one in use (events.metricsReloadFailed).
  async reload () {
    if (!this.server) return
    try {
      await this.server.reload()
    } catch (err) {
      this.counters.event('metricsReloadFailed')
      const outcome = err.endpointDown ? 'the endpoint is down until the next restart' : 'the one in use stays'
      this.logger.error({ error: briefError(err) }, `metrics web config not reloaded, ${outcome}: ${err.message}`)
    }
  }

  async stop () {
    const server = this.server
    this.server = null
    if (server) await server.stop()
  }

  /** Where it serves, or null (off). */
  address () {
    return this.server ? this.server.address() : null
  }
}

module.exports = MetricsEndpoint
