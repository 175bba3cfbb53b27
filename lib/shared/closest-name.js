'use strict'

// Optimal string alignment distance: Levenshtein plus adjacent swaps.
function editDistance (a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
      }
    }
  }
  return d[a.length][b.length]
}

/**
 * The candidate a mistyped name most likely meant (a case slip counts
 * nothing, a few edits count, or the one candidate it is a prefix of), or
 * undefined.
 * @param {string} name
 * @param {Iterable<string>} candidates
 * @returns {string|undefined}
 */
function closestName (name, candidates) {
  const list = [...candidates]
  const sameCase = list.find((c) => c.toLowerCase() === name.toLowerCase())
  if (sameCase) return sameCase
  let best
  let bestDistance = Math.max(1, Math.floor(name.length / 3)) + 1
  for (const candidate of list) {
    const distance = editDistance(name, candidate)
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance]
  }
  if (best || name.length < 3) return best
  const prefixed = list.filter((c) => c.startsWith(name))
  return prefixed.length === 1 ? prefixed[0] : undefined
}

module.exports = { closestName, editDistance }
