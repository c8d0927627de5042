from wizard.cli import main

main()
