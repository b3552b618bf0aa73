package auditrules

import "github.com/tracer-dev/tracer/auditrules/cost"

// The rule-cost analyser moved to package auditrules/cost. These names
// remain for bench's report until it uses cost's.

// CostReport is cost.Report.
//
// Deprecated: use cost.Report.
type CostReport = cost.Report

// CostHigh is cost.High.
//
// Deprecated: use cost.High.
const CostHigh = cost.High
