// Partition rules files (*.rules): a device mesh with named axes, rules from
// logical axes to mesh axes, per-parameter overrides, which scanned blocks
// recompute their activations in the backward pass, and the training batch's
// microbatches and, for a pipeline, its schedule, and the precision of its matrix
// products.
grammar ShardRules;
import ShardLexerCommon;

// Sections may come in any order; sema checks there is exactly one mesh.
rulesFile : (meshDecl | rulesBlock | overrideDecl | rematDecl | microbatchesDecl | scheduleDecl | precisionDecl)* EOF ;

meshDecl : 'mesh' '(' meshAxis (',' meshAxis)* ')' ;
meshAxis : IDENT '=' INT ;

rulesBlock : 'rules' '{' ruleDecl* '}' ;
ruleDecl   : IDENT '->' meshTarget ;

// `none` replicates; `(a, b)` splits one dimension over two mesh axes.
meshTarget : 'none' | IDENT | '(' IDENT (',' IDENT)* ')' ;

// override "layers.*.W2" : [none, model, none]
overrideDecl : 'override' STRING ':' '[' (meshTarget (',' meshTarget)*)? ']' ;

// remat "blocks" : nothing   (a glob over scanned blocks' paths; the policy: nothing,
// dots or everything, what the backward pass keeps of the forward's values)
rematDecl : 'remat' STRING ':' IDENT ;

// microbatches 4   (the training step runs the batch in 4 slices, their gradients
// summed before they are reduced across ranks and applied: gradient accumulation)
microbatchesDecl : 'microbatches' INT ;

// schedule "1f1b"   (the order in which a pipeline's stages run the microbatches'
// forward and backward passes, named as torchtitan names them: "gpipe" or "1f1b", in
// any case; the rule `layer -> stage` makes a pipeline)
scheduleDecl : 'schedule' STRING ;

// precision matmul : bf16   (every matrix product's operands rounded to bfloat16,
// their products accumulated in f32; the tensors a product makes and everything else
// stay f32: f32, the default, or bf16)
// precision gradients : bf16   (the parameters' gradients reduced across ranks in
// bfloat16, summed in f32)
precisionDecl : 'precision' IDENT ':' IDENT ;
