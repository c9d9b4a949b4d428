package main

// notifyConsumers is how many webhook deliveries `berth serve` makes at
// once (the notify queue's consumers).
const notifyConsumers = 16
