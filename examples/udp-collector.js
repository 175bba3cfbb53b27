'use strict'
// A minimal UDP collector: the master distributes datagrams to 2 workers
// that count words. Run: node examples/udp-collector.js, then
//   echo "hello world" | nc -u -w0 127.0.0.1 9999
const { LoadBalancer } = require('..')

async function main () {
  const lb = new LoadBalancer({
    name: 'words',
    port: Number(process.env.PORT || 9999),
    instances: 2,
    worker: require.resolve('./word-count-worker')
  })
  lb.on('workerExit', (info) => console.error('worker exited', info))
  await lb.start()
  console.log('listening on', lb.address())
  const timer = setInterval(async () => {
    const s = await lb.stats()
    console.log(`received ${s.received}, words ${s.workers.map((w) => w.custom.words).join(' + ')}`)
  }, 5000)
  process.once('SIGINT', async () => {
    clearInterval(timer)
    await lb.stop() // drains: everything received is processed first
    console.log('stopped', lb.summary())
  })
}

main()
