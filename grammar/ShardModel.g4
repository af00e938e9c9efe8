// Model files (*.shard): blocks, models and the expressions inside them.
// grammar/README.md is the language reference; this file is the truth.
grammar ShardModel;
import ShardLexerCommon;

modelFile : importDecl* topDecl* EOF ;

importDecl : 'import' modulePath ;
modulePath : IDENT ('.' IDENT)* ;         // nn -> nn.shard, a.b -> a/b.shard

topDecl : blockDecl | modelDecl ;

// ---- blocks: parameters and a forward function, instantiated with config values
blockDecl  : 'block' IDENT configList? '{' blockMember* '}' ;
configList : '(' (configParam (',' configParam)*)? ')' ;
configParam : IDENT ':' scalarKind ('=' expr)? ;
scalarKind : 'int' | 'float' | 'bool' | 'string' | 'axis' ;

// A termDecl outside a forward function parses so that sema can say where it belongs.
blockMember : paramDecl | letStmt | forwardDecl | termDecl ;
paramDecl   : 'param' IDENT ':' tensorType ('init' expr)? ;
forwardDecl : 'forward' '(' (argDecl (',' argDecl)*)? ')' '->' tensorType
              '{' forwardStmt* returnStmt '}' ;
forwardStmt : letStmt | termDecl ;
// A block's auxiliary loss term or metric (Flax's sow): one per instance, each
// loss added to the model's loss, all reported under the instance's path.
termDecl    : kind=('loss' | 'metric') IDENT '=' expr ;
argDecl     : IDENT ':' tensorType ;
returnStmt  : 'return' expr ;

// ---- the model: inputs, values, loss, metrics, optimizer and generation
modelDecl   : 'model' IDENT configList? '{' modelMember* '}' ;
modelMember : inputDecl | letStmt | lossDecl | metricDecl | optimizerDecl | generateDecl ;
inputDecl     : 'input' IDENT ':' tensorType ;
lossDecl      : 'loss' (IDENT '=')? expr ;  // a name: sema says it is a block's
metricDecl    : 'metric' IDENT '=' expr ;
optimizerDecl : 'optimizer' IDENT callArgs ;
// `generate tokens ~ logits`: --generate draws the input `tokens` one position at a
// time from the model's value `logits` (each position's scores for the next one).
generateDecl  : 'generate' input=IDENT '~' logits=IDENT ;

// `let y = e : [a, b]` pins the sharding of y (a constraint).
letStmt : 'let' IDENT '=' expr (':' shape)? ;

// ---- types: element type and named dimensions, each with an optional size
tensorType : dtype shape ;
dtype      : 'f32' | 'i32' | 'bool' ;
shape      : '[' (dim (',' dim)*)? ']' ;
dim        : IDENT ('=' expr)? ;

// ---- expressions; alternatives are listed from tightest to loosest binding
expr
  : expr callArgs                                   # callExpr
  | '-' expr                                        # negExpr
  | expr op=('@' | '*' | '/') expr                  # mulExpr
  | expr op=('+' | '-') expr                        # addExpr
  | expr op=('==' | '!=' | '<' | '<=' | '>' | '>=') expr  # compareExpr
  | '(' expr ')'                                    # parenExpr
  | shape                                           # shapeExpr
  | IDENT                                           # nameExpr
  | INT                                             # intExpr
  | FLOAT                                           # floatExpr
  | STRING                                          # stringExpr
  | ('true' | 'false')                              # boolExpr
  ;

callArgs : '(' (arg (',' arg)*)? ')' ;
arg      : (IDENT '=')? expr ;
