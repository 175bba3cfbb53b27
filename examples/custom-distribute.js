'use strict'
// A custom distribute(): keep each syslog host on one worker by hashing the
// HOSTNAME field instead of the source address, and send everything to
// the least busy worker when the message has no host.
const { LoadBalancer, strategies } = require('..')

class HostAffinityBalancer extends LoadBalancer {
  key (message) {
    const fields = message.data.toString('latin1', 0, 256).split(' ')
    return fields[2] || '' // <PRI>1 TIMESTAMP HOSTNAME …
  }

  distribute (workers, message) {
    if (this.key(message) === '') return strategies['least-loaded'].call(this, workers, message)
    return strategies.hash.call(this, workers, message)
  }
}

if (require.main === module) {
  const lb = new HostAffinityBalancer({ port: 9997, instances: 2, worker: require.resolve('./word-count-worker') })
  lb.start().then(() => console.log('listening on', lb.address()))
  process.once('SIGINT', () => lb.stop())
}

module.exports = HostAffinityBalancer
