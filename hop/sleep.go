package hop

// The owner's sleep lengths, shared by the data path (which decides when
// to hold a batch) and each platform's wait.

// minSleep is the shortest sleep: at 1 Gbit/s a packet leaves every
// 12 µs, and waking for each costs more CPU than the forwarding itself;
// sleeping a little longer handles several, each at its scheduled time.
const minSleep = 25_000 // ns

// batchSleep is how long the owner sleeps when packets leave closer than
// minSleep apart (links over ~500 Mbit/s): at most 10 000 wake-ups a
// second however fast the link, and fewer wake-ups per segment cost less
// owner CPU (docs/performance.md). Links up to ~500 Mbit/s never batch: their releases keep the
// lateness of a single wake-up.
const batchSleep = 100_000 // ns
