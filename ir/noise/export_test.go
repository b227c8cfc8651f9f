package noise

// StabilityConditions exposes stabilityConditions to the external tests.
var StabilityConditions = stabilityConditions
