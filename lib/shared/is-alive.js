'use strict'

/** Whether a process with this pid exists (EPERM: it does, owned by someone else). */
function isAlive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

module.exports = { isAlive }
