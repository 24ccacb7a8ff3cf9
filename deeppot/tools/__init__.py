"""DeePMD-kit's everyday commands as library functions (`deeppot neighbor-stat`, `show`, `change-bias`,
`convert-data`): the command line only parses arguments and calls these."""
