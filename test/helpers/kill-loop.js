'use strict'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * SIGKILLs one worker of `balancer` every `everyMs` until stopped, only while
 * every instance is up (one dead worker at a time: with none left, UDP has
 * nowhere to go and is dropped as queueFull); `stop()` resolves with the
 * number killed. Used by the delivery tests and benchmarks/chaos.js.
 */
function killLoop (balancer, everyMs) {
  let stopped = false
  let killed = 0
  const done = (async () => {
    while (!stopped) {
      await sleep(everyMs)
      if (stopped) break
      const workers = (await balancer.stats()).workers.filter((w) => w.state === 'ready')
      if (workers.length < balancer.options.instances) continue
      try {
        process.kill(workers[killed % workers.length].pid, 'SIGKILL')
        killed++
      } catch {}
    }
    return killed
  })()
  return { stop: () => { stopped = true; return done } }
}

module.exports = { killLoop }
