// Tokens shared by model files (ShardModel.g4) and rules files (ShardRules.g4).
// Imported rules sit below the importing grammar's keywords, so keywords win
// over IDENT.
lexer grammar ShardLexerCommon;

FLOAT
  : DIGITS '.' DIGITS? EXPONENT?
  | '.' DIGITS EXPONENT?
  | DIGITS EXPONENT
  ;
INT    : DIGITS ;
STRING : '"' ( ~["\\\r\n] | '\\' . )* '"' ;
IDENT  : [a-zA-Z_] [a-zA-Z_0-9]* ;

LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS            : [ \t\r\n\f]+ -> skip ;

fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;

// A `/*` never closed: one token to the end of the file, reported as an
// error by the parser driver instead of lexing the rest as code.
UNTERMINATED_COMMENT : '/*' ( ~'*' | '*'+ ~[*/] )* '*'* EOF ;
