// Partition rules files (*.rules): a device mesh with named axes, rules from
// logical axes to mesh axes, and per-parameter overrides.
grammar ShardRules;
import ShardLexerCommon;

// Sections may come in any order; sema checks there is exactly one mesh.
rulesFile : (meshDecl | rulesBlock | overrideDecl)* EOF ;

meshDecl : 'mesh' '(' meshAxis (',' meshAxis)* ')' ;
meshAxis : IDENT '=' INT ;

rulesBlock : 'rules' '{' ruleDecl* '}' ;
ruleDecl   : IDENT '->' meshTarget ;

// `none` replicates; `(a, b)` splits one dimension over two mesh axes.
meshTarget : 'none' | IDENT | '(' IDENT (',' IDENT)* ')' ;

// override "layers.*.W2" : [none, model, none]
overrideDecl : 'override' STRING ':' '[' (meshTarget (',' meshTarget)*)? ']' ;
