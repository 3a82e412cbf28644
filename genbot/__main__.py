from genbot.cli import main

main(prog_name="genbot")
