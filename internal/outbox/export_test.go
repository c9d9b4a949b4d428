package outbox

// Remembered is how many items h's memory holds.
func Remembered(h *Handover) int { return h.remembered() }
