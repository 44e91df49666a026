#! /usr/bin/env atf-sh
# postcat on good and damaged queue files: envelope lines, content byte
# for byte, -e/-h/-b, lookup by queue ID, the damage line and exit status.

POSTCAT=@BUILDDIR@/bin/postcat
MKQFILE=@BUILDDIR@/tests/tools/mkqfile

# A configuration directory "etc" whose queue_directory is ./q.
mkconf() {
	mkdir -p etc
	printf 'queue_directory = %s/q\n' "$(pwd)" > etc/main.cf
}

# The message used below: CRLF and bare LF lines, 8-bit data, no final
# newline.
mkcontent() {
	printf 'Subject: hi\r\nX-8: caf\303\251 \377\n\nbody line\r\n\nlast' > content
	printf 'Subject: hi\r\nX-8: caf\303\251 \377\n' > header.want
	printf 'body line\r\n\nlast' > body.want
}

# Writes the message; its ID in $ID.
mkmsg() {
	mkcontent
	ID=$($MKQFILE -d q -f alice@example.org -T 1700000000.000042 -e ENV1 \
	    -R HDRS -a rewrite_context=local -a 'client=host[192.0.2.1]' \
	    -O Bob -P 'rfc822;bob@example.net' -N 3 -r bob@example.net \
	    -r carol@example.net -N 8 -x dave@example.net -k 1 -A 3 \
	    -W 1700086400 "$@" < content) || atf_fail "mkqfile failed"
}

atf_test_case good_file
good_file_head() {
	atf_set descr "postcat shows envelope, content and extracted recipients"
}
good_file_body() {
	mkmsg
	export TZ=UTC
	atf_check -s exit:0 -o save:out -e empty $POSTCAT q/incoming/$ID
	cat > want <<EOF
*** ENVELOPE RECORDS q/incoming/$ID ***
version: 2
message_size: 43
content_offset: 346
extracted_offset: 425
recipient_count: 3
attempts: 3
next_warning_time: 1700086400 (Wed, 15 Nov 2023 22:13:20 +0000)
arrival_time: 1700000000.000042 (Tue, 14 Nov 2023 22:13:20 +0000)
sender: alice@example.org
envid: ENV1
ret: HDRS
attribute: rewrite_context=local
attribute: client=host[192.0.2.1]
original_recipient: Bob
orcpt: rfc822;bob@example.net
notify: SUCCESS,FAILURE
recipient: bob@example.net
done_recipient: carol@example.net
*** MESSAGE CONTENTS q/incoming/$ID ***
EOF
	cat content >> want
	printf '\n' >> want
	cat >> want <<EOF
*** HEADER EXTRACTED q/incoming/$ID ***
notify: NEVER
recipient: dave@example.net
*** MESSAGE FILE END q/incoming/$ID ***
EOF
	atf_check -s exit:0 cmp want out
	# A file of version 1 (before the record checks) shows the same,
	# with its own version and offsets.
	ID1=$ID
	mkmsg -V 1
	atf_check -s exit:0 -o save:out1 -e empty $POSTCAT q/incoming/$ID
	sed -e "s,$ID1,$ID," -e 's/^version: 2$/version: 1/' \
	    -e 's/^content_offset: 346$/content_offset: 296/' \
	    -e 's/^extracted_offset: 425$/extracted_offset: 351/' want > want1
	atf_check -s exit:0 cmp want1 out1
}

atf_test_case parts
parts_head() {
	atf_set descr "postcat -h, -b and -e print one part, -h/-b byte for byte"
}
parts_body() {
	mkmsg
	atf_check -s exit:0 -o save:h.out -e empty $POSTCAT -h q/incoming/$ID
	atf_check -s exit:0 cmp header.want h.out
	atf_check -s exit:0 -o save:b.out -e empty $POSTCAT -b q/incoming/$ID
	atf_check -s exit:0 cmp body.want b.out
	atf_check -s exit:0 -o save:e.out -e empty $POSTCAT -e q/incoming/$ID
	atf_check -s exit:0 -o match:'^recipient: bob@example.net$' cat e.out
	atf_check -s exit:0 -o match:'^recipient: dave@example.net$' cat e.out
	atf_check -s exit:0 -o match:'MESSAGE FILE END' cat e.out
	atf_check -s exit:1 -o empty grep -e 'MESSAGE CONTENTS' -e 'body line' e.out
	# a 1 MB line and empty body survive byte for byte
	awk 'BEGIN { printf "Subject: long\n\n"; for (i = 0; i < 1048576; i++) printf "x"; printf "\r\n" }' > big
	BIG=$($MKQFILE -d q -f a@b -r c@d < big)
	atf_check -s exit:0 -o save:big.out $POSTCAT -b q/incoming/$BIG
	tail -c +16 big > big.body
	atf_check -s exit:0 cmp big.body big.out
	printf 'Subject: empty\n\n' > nobody
	NB=$($MKQFILE -d q -f a@b -r c@d < nobody)
	atf_check -s exit:0 -o empty $POSTCAT -b q/incoming/$NB
	atf_check -s exit:0 -o inline:'Subject: empty\n' $POSTCAT -h q/incoming/$NB
}

atf_test_case by_queue_id
by_queue_id_head() {
	atf_set descr "postcat -q finds a queue ID in any queue, hashed too"
}
by_queue_id_body() {
	mkconf
	mkmsg
	atf_check -s exit:0 -o match:"^\*\*\* ENVELOPE RECORDS incoming/$ID \*\*\*$" \
	    $POSTCAT -c etc -q $ID
	# deferred is hashed by default: deferred/<last microsecond digit>/ID
	h=$(printf '%s' "$ID" | cut -c11)
	mkdir -p q/deferred/$h
	mv q/incoming/$ID q/deferred/$h/$ID
	atf_check -s exit:0 -o match:"^\*\*\* MESSAGE FILE END deferred/$ID \*\*\*$" \
	    $POSTCAT -c etc -q $ID
	MAIL_CONFIG=$(pwd)/etc atf_check -s exit:0 -o save:b.out $POSTCAT -bq $ID
	atf_check -s exit:0 cmp body.want b.out
	# not there, not an ID
	atf_check -s exit:1 -e match:'1NB6Q3P0B4K7G2: not found in any queue' \
	    $POSTCAT -c etc -q 1NB6Q3P0B4K7G2
	atf_check -s exit:1 -e match:'tmp.1.2: not a valid queue ID' \
	    $POSTCAT -c etc -q tmp.1.2
	# without -q a bare ID is a file name, with a hint
	atf_check -s exit:1 -e match:'use -q' $POSTCAT $ID
}

atf_test_case damaged
damaged_head() {
	atf_set descr "postcat shows a damaged file up to the damage, says where and why, exits 1"
}
damaged_body() {
	mkmsg
	f=q/incoming/$ID
	size=$(wc -c < $f)
	# cut inside the content: the envelope is shown in full
	head -c 395 $f > cut
	atf_check -s exit:1 -o save:out -e match:'damaged queue file: at offset 3[0-9][0-9]: truncated line record' \
	    $POSTCAT cut
	atf_check -s exit:0 -o match:'^done_recipient: carol@example.net$' cat out
	atf_check -s exit:0 -o match:'^\*\*\* MESSAGE CONTENTS cut \*\*\*$' cat out
	atf_check -s exit:0 -o match:'^Subject: hi' cat out
	atf_check -s exit:0 -o match:'^\*\*\* DAMAGED FILE cut: at offset 3[0-9][0-9]: truncated line record \([0-9]+ of [0-9]+ data bytes present\) \*\*\*$' cat out
	atf_check -s exit:1 -o empty grep 'MESSAGE FILE END' out
	# the end record (22 bytes) missing
	head -c $((size - 22)) $f > noend
	atf_check -s exit:1 -o match:"DAMAGED FILE noend: at offset $((size - 22)): missing end record" \
	    -e ignore $POSTCAT noend
	# garbage and an empty file
	printf 'hello\n' > text
	atf_check -s exit:1 -o match:'at offset 0: not a queue file' -e ignore $POSTCAT text
	: > empty
	atf_check -s exit:1 -o match:'at offset 0: empty file' -e ignore $POSTCAT empty
	# a changed byte in the sizes slot: the slot check fails at offset 3
	cp $f bad
	printf 'f' | dd of=bad bs=1 seek=10 conv=notrunc 2>/dev/null
	atf_check -s exit:1 -o match:'at offset 3: damaged sizes slot' -e ignore $POSTCAT bad
	# a changed byte in a recipient: its record's check fails, at its
	# offset; what comes before it is shown
	cp $f bad
	off=$(grep -boa 'dave@example.net' bad | cut -d: -f1)
	printf 'X' | dd of=bad bs=1 seek=$off conv=notrunc 2>/dev/null
	atf_check -s exit:1 -o save:out \
	    -e match:"damaged queue file: at offset $((off - 2)): recipient record fails its check" \
	    $POSTCAT bad
	atf_check -s exit:0 -o match:'^notify: NEVER$' cat out
	atf_check -s exit:1 -o empty grep 'dave@' out
	# the type byte of a recipient alone says done: half marked, not done
	cp $f half
	off=$(grep -boa 'bob@example.net' half | sed -n 2p | cut -d: -f1)
	printf 'r' | dd of=half bs=1 seek=$((off - 2)) conv=notrunc 2>/dev/null
	atf_check -s exit:0 -o match:'^half_marked_recipient: bob@example.net$' \
	    -e empty $POSTCAT half
	# several files: the good one is still shown, status 1 overall
	atf_check -s exit:1 -o match:"MESSAGE FILE END $f" -e ignore $POSTCAT empty $f
	# unreadable: an error, no damage line
	atf_check -s exit:1 -o empty -e match:'open nosuch' $POSTCAT nosuch
}

atf_test_case usage
usage_head() {
	atf_set descr "postcat refuses bad option combinations"
}
usage_body() {
	atf_check -s exit:2 -e match:'usage' $POSTCAT
	atf_check -s exit:2 -e match:'usage' $POSTCAT -e -b x
	atf_check -s exit:2 -e match:'usage' $POSTCAT -h -b x
	atf_check -s exit:2 -e match:'usage' $POSTCAT -Z x
}

atf_init_test_cases() {
	atf_add_test_case good_file
	atf_add_test_case parts
	atf_add_test_case by_queue_id
	atf_add_test_case damaged
	atf_add_test_case usage
}
