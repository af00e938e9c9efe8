//===- Passes.td - the communication plan as a pass ------*- tablegen -*-===//
//
// shardc prints the plan itself (--report, --strict); this pass prints it for
// any module, so that lit tests check the analysis on hand-written IR.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_REPORT_PASSES
#define SHARDC_REPORT_PASSES

include "mlir/Pass/PassBase.td"

def PrintCommPlanPass : Pass<"shardc-print-comm-plan", "::mlir::ModuleOp"> {
  let summary = "Print the communication plan of a partitioned module "
                "(shardc --report)";
  let description = [{
    Reads what MLIRGen stamped on the module (mesh axis names on the grid,
    argument roles, the layouts constraints and outputs asked for) and the
    collectives shard-partition made, and prints memory per rank and every
    collective with its cause to standard output. The IR is unchanged.

    ```
    shardc model.shard --rules tp.rules --emit=spmd --locations > spmd.mlir
    shardc-opt spmd.mlir --shardc-print-comm-plan=json=true
    ```

    With `strict`, a reshard nobody asked for is an error at the
    collective's source location and the pass fails (shardc --strict).
  }];
  let options = [
    Option<"asJson", "json", "bool", /*default=*/"false",
           "As JSON (shardc --report=json)">,
    Option<"strict", "strict", "bool", /*default=*/"false",
           "Fail on every reshard no rule or constraint asked for (shardc --strict)">,
  ];
}

#endif // SHARDC_REPORT_PASSES
