from wisconsin.cli import main

main()
